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

variable "staging_retention_days" {
  type        = number
  description = "Staged job files are deleted after this many days. Workers read them when they start, so keep it above the time between two updates of a job; null keeps them."
  default     = 365

  validation {
    condition     = var.staging_retention_days == null || try(var.staging_retention_days >= 1, false)
    error_message = "staging_retention_days must be at least 1, or null."
  }
}

variable "message_retention" {
  type        = string
  description = "How long the subscriptions keep unacknowledged messages (at most 604800s)."
  default     = "604800s"
}

variable "input_topics" {
  type        = list(string)
  description = "Topics the pipeline reads; each gets a subscription with a dead-letter policy."
  default     = ["events"]

  validation {
    condition     = length(var.input_topics) > 0 && alltrue([for t in var.input_topics : can(regex("^[a-z][a-z0-9-]{2,30}$", t))])
    error_message = "input_topics must be 1 or more names of 3-31 lowercase letters, digits or hyphens."
  }
}

variable "output_topics" {
  type        = list(string)
  description = "Topics the pipeline publishes to (at least `errors`); each gets a subscription for readers."
  default     = ["outputs", "errors"]

  validation {
    condition     = contains(var.output_topics, "errors") && alltrue([for t in var.output_topics : can(regex("^[a-z][a-z0-9-]{2,30}$", t))])
    error_message = "output_topics must include \"errors\" and hold names of 3-31 lowercase letters, digits or hyphens."
  }
}

variable "max_delivery_attempts" {
  type        = number
  description = "Deliveries of one input message before Pub/Sub moves it to the dead-letter topic."
  default     = 10

  validation {
    condition     = var.max_delivery_attempts >= 5 && var.max_delivery_attempts <= 100
    error_message = "max_delivery_attempts must be between 5 and 100 (Pub/Sub's limits)."
  }
}

variable "launcher_members" {
  type        = list(string)
  description = "IAM members (e.g. user:a@example.com, serviceAccount:ci@...) allowed to launch jobs as the worker service account."
  default     = []
}

variable "input_publishers" {
  type        = map(list(string))
  description = "Input topic name -> IAM members granted roles/pubsub.publisher on that topic alone (e.g. answers -> the approvers), so nobody needs a project-wide publisher role."
  default     = {}

  validation {
    condition     = alltrue([for topic in keys(var.input_publishers) : contains(var.input_topics, topic)])
    error_message = "input_publishers keys must be input_topics."
  }
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key (projects/P/locations/L/keyRings/R/cryptoKeys/K) for the buckets, the image repository and the topics; null uses Google-managed keys. The services' agents need roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
  default     = null
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
