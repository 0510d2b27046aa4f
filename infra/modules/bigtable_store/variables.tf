variable "project_id" {
  type        = string
  description = "Project that holds the Bigtable instance."
}

variable "instance_name" {
  type        = string
  description = "Bigtable instance id: created by this module, or an existing instance when create_instance is false."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,31}[a-z0-9]$", var.instance_name))
    error_message = "instance_name must be 6-33 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "create_instance" {
  type        = bool
  description = "Create the instance. Set to false to add the table to an existing instance named instance_name."
  default     = true
}

variable "zone" {
  type        = string
  description = "Zone of the single cluster when the instance is created (e.g. europe-west1-b)."
  default     = null
}

variable "num_nodes" {
  type        = number
  description = "Fixed node count of the cluster. One node is the minimum for a production instance."
  default     = 1

  validation {
    condition     = var.num_nodes >= 1
    error_message = "num_nodes must be at least 1."
  }
}

variable "storage_type" {
  type        = string
  description = "SSD or HDD. SSD suits the point reads and short prefix scans of the memory store."
  default     = "SSD"

  validation {
    condition     = contains(["SSD", "HDD"], var.storage_type)
    error_message = "storage_type must be SSD or HDD."
  }
}

variable "table_name" {
  type        = string
  description = "Table that holds long-term memory rows."
  default     = "beam-agents-longterm"
}

variable "max_age" {
  type        = string
  description = "Optional retention: cells older than this duration (e.g. \"2160h\" for 90 days) are garbage-collected. null keeps rows until deleted."
  default     = null

  validation {
    condition     = var.max_age == null || can(regex("^[0-9]+(ms|s|m|h)$", var.max_age))
    error_message = "max_age must be a duration such as \"720h\" or \"90m\"."
  }
}

variable "backup_retention" {
  type        = string
  description = "How long automated table backups are kept, in seconds (e.g. \"604800s\", 7 days; at most 90 days). null turns automated backups off."
  default     = "604800s"

  validation {
    condition     = var.backup_retention == null || can(regex("^[0-9]+s$", var.backup_retention))
    error_message = "backup_retention must be a duration in seconds such as \"604800s\", or null."
  }
}

variable "backup_frequency" {
  type        = string
  description = "How often an automated backup is taken, in seconds (\"86400s\": daily, Bigtable's only frequency today)."
  default     = "86400s"

  validation {
    condition     = can(regex("^[0-9]+s$", var.backup_frequency))
    error_message = "backup_frequency must be a duration in seconds such as \"86400s\"."
  }
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key for the cluster's data (CMEK), in the cluster's region; null uses Google-managed keys. The Bigtable service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it. Set only when the module creates the instance."
  default     = null
}

variable "worker_service_account" {
  type        = string
  description = "Email of the Dataflow worker service account to grant roles/bigtable.user. null grants nothing."
  default     = null
}

variable "iam_scope" {
  type        = string
  description = "Where roles/bigtable.user is granted: \"table\" (least privilege) or \"instance\"."
  default     = "table"

  validation {
    condition     = contains(["table", "instance"], var.iam_scope)
    error_message = "iam_scope must be \"table\" or \"instance\"."
  }
}

variable "deletion_protection" {
  type        = bool
  description = "Refuse to destroy the instance and table (set to false for throwaway environments)."
  default     = true
}

variable "labels" {
  type        = map(string)
  description = "Labels applied to the instance."
  default     = {}
}
