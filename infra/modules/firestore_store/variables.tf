variable "project_id" {
  type        = string
  description = "Project that holds the Firestore database."
}

variable "location_id" {
  type        = string
  description = "Firestore location: a region (e.g. europe-west1) or a multi-region (nam5, eur3). Fixed once created."
}

variable "database_name" {
  type        = string
  description = "Database id. \"(default)\" is the project's default database; any other name needs ?database= in the URI (added by this module)."
  default     = "(default)"
}

variable "create_database" {
  type        = bool
  description = "Create the database. Set to false when it already exists (e.g. a project's existing (default) database)."
  default     = true
}

variable "collection" {
  type        = string
  description = "Collection that holds long-term memory documents."
  default     = "beam_agents_longterm"

  validation {
    condition     = can(regex("^[^/]+$", var.collection))
    error_message = "collection must be a top-level collection id (no slash)."
  }
}

variable "embedding_dimensions" {
  type        = number
  description = "Dimensions of the embedder's vectors (AgentConfig.embedder; 384 for all-MiniLM-L6-v2): the vector index recall across entities needs. null declares no vector index. Changing it replaces the index."
  default     = 384

  validation {
    condition     = var.embedding_dimensions == null ? true : var.embedding_dimensions >= 1 && var.embedding_dimensions <= 2048 && floor(var.embedding_dimensions) == var.embedding_dimensions
    error_message = "embedding_dimensions must be a whole number from 1 to 2048 (Firestore's largest vector index), or null."
  }
}

variable "ttl_enabled" {
  type        = bool
  description = "Add a TTL policy on the expire_at field: documents whose expire_at is in the past are deleted (typically within a day)."
  default     = false
}

variable "backup_retention" {
  type        = string
  description = "How long each daily backup is kept, in seconds (at most 7 days for daily backups: \"604800s\"). null schedules none."
  default     = "604800s"

  validation {
    condition     = var.backup_retention == null || can(regex("^[0-9]+s$", var.backup_retention))
    error_message = "backup_retention must be a duration in seconds such as \"604800s\", or null."
  }
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key for the database (CMEK), in the database's location; null uses Google-managed keys. Fixed at creation; the Firestore service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
  default     = null
}

variable "worker_service_account" {
  type        = string
  description = "Email of the Dataflow worker service account to grant roles/datastore.user on this database. null grants nothing."
  default     = null
}

variable "deletion_policy" {
  type        = string
  description = "What terraform destroy does to a created database: ABANDON (keep it) or DELETE."
  default     = "ABANDON"

  validation {
    condition     = contains(["ABANDON", "DELETE"], var.deletion_policy)
    error_message = "deletion_policy must be ABANDON or DELETE."
  }
}
