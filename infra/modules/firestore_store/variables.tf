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

variable "ttl_enabled" {
  type        = bool
  description = "Add a TTL policy on the expire_at field: documents whose expire_at is in the past are deleted (typically within a day)."
  default     = false
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
