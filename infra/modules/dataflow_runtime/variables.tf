variable "project_id" {
  type        = string
  description = "Project that runs the Dataflow job."
}

variable "region" {
  type        = string
  description = "Region of the job, its buckets and its image repository."
}

variable "name" {
  type        = string
  description = "Prefix for every resource name (service account, buckets, repository, topics)."
  default     = "beam-agents"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{3,20}$", var.name))
    error_message = "name must be 4-21 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "temp_retention_days" {
  type        = number
  description = "Objects in the temp bucket are deleted after this many days."
  default     = 7
}

variable "message_retention" {
  type        = string
  description = "How long the subscriptions keep unacknowledged messages (at most 604800s)."
  default     = "604800s"
}

variable "launcher_members" {
  type        = list(string)
  description = "IAM members (e.g. user:a@example.com, serviceAccount:ci@...) allowed to launch jobs as the worker service account."
  default     = []
}

variable "force_destroy" {
  type        = bool
  description = "Let terraform destroy delete non-empty buckets."
  default     = false
}

variable "labels" {
  type        = map(string)
  description = "Labels applied to buckets, the repository and the topics."
  default     = {}
}
