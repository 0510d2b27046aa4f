variable "project_id" {
  type        = string
  description = "Project that runs the job."
}

variable "region" {
  type        = string
  description = "Region of the job."
}

variable "name" {
  type        = string
  description = "Job name; Dataflow updates a running job with the same name in place."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,62}[a-z0-9])?$", var.name))
    error_message = "name must be lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "template_path" {
  type        = string
  description = "gs:// path of the Flex Template spec built by `make deploy`."

  validation {
    condition     = startswith(var.template_path, "gs://")
    error_message = "template_path must be a gs:// path."
  }
}

variable "image" {
  type        = string
  description = "Worker image (the launcher's image too), by digest: REGION-docker.pkg.dev/PROJECT/REPO/NAME@sha256:HEX."

  validation {
    condition     = can(regex("@sha256:[0-9a-f]{64}$", var.image))
    error_message = "image must name the image by digest (...@sha256:<64 hex digits>): a tag can move."
  }
}

variable "parameters" {
  type        = map(string)
  description = "Flex Template parameters (app/metadata.json). Never secrets: keys travel as Secret Manager names."
}

variable "service_account_email" {
  type        = string
  description = "Worker service account (dataflow_runtime's service_account_email)."
}

variable "temp_location" {
  type        = string
  description = "gs:// path for temporary files."
}

variable "staging_location" {
  type        = string
  description = "gs:// path for staged files."
}

variable "subnetwork" {
  type        = string
  description = "Subnetwork self link for the workers, with Private Google Access: they get private IPs only."
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key for the job's state and data at rest; null uses Google-managed keys. The Dataflow and Compute Engine service agents need roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
  default     = null
}

variable "machine_type" {
  type        = string
  description = "Worker machine type; null lets Dataflow choose."
  default     = null
}

variable "max_workers" {
  type        = number
  description = "Upper bound of autoscaling; null lets Dataflow choose."
  default     = null
}

variable "transform_name_mapping" {
  type        = map(string)
  description = "Old -> new transform names when an update renames a stable transform."
  default     = {}
}

variable "labels" {
  type        = map(string)
  description = "Labels of the job."
  default     = {}
}
