variable "project_id" {
  type        = string
  description = "Project that holds the secret."
}

variable "secret_id" {
  type        = string
  description = "Secret Manager secret id, e.g. triage-entity-hash."
}

variable "worker_service_account" {
  type        = string
  description = "Email of the Dataflow worker service account: roles/secretmanager.secretAccessor on this secret alone."
}

variable "readers" {
  type        = list(string)
  description = "Other IAM members who read the key (roles/secretmanager.secretAccessor on this secret alone), e.g. the console's identity for a signing key."
  default     = []
}

variable "length" {
  type        = number
  description = "Characters of the generated key (letters and digits)."
  default     = 64

  validation {
    condition     = var.length >= 32
    error_message = "length must be at least 32 characters."
  }
}

variable "generation" {
  type        = number
  description = "Generation of the key: change it to draw a new one and write it as a new version (write-only, never in state). A job keeps the version it was started with."
  default     = 1
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key (CMEK) for the secret's versions; null uses Google-managed keys. Fixed at creation: changing it replaces the secret, and so draws a new key. The Secret Manager service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
  default     = null
}
