variable "project_id" {
  type        = string
  description = "Project that holds the state bucket."
}

variable "bucket_name" {
  type        = string
  description = "Globally unique name of the state bucket, e.g. my-project-tfstate."

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9_.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be 3-63 lowercase letters, digits, dots, hyphens or underscores."
  }
}

variable "location" {
  type        = string
  description = "Bucket location: the deployment's region, or a multi-region such as EU."
}

variable "operators" {
  type        = list(string)
  description = "IAM members who run terraform for the deployments: roles/storage.objectUser on this bucket alone."
  default     = []
}

variable "state_versions_kept" {
  type        = number
  description = "Superseded state versions kept per state file."
  default     = 20
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key for the state objects (CMEK); null uses Google-managed keys. The Cloud Storage service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
  default     = null
}
