variable "project_id" {
  type        = string
  description = "Project that holds the Memorystore instance."
}

variable "region" {
  type        = string
  description = "Region of the instance; use the Dataflow job's region."
}

variable "name" {
  type        = string
  description = "Memorystore instance id."
  default     = "beam-agents-memory"
}

variable "authorized_network" {
  type        = string
  description = "VPC network id (projects/P/global/networks/N) with private service access; Dataflow workers must run in it."
}

variable "reserved_ip_range" {
  type        = string
  description = "Name of the private service access range to allocate from. null lets the service pick one."
  default     = null
}

variable "tier" {
  type        = string
  description = "BASIC (one node, no failover) or STANDARD_HA (replicated, automatic failover)."
  default     = "STANDARD_HA"

  validation {
    condition     = contains(["BASIC", "STANDARD_HA"], var.tier)
    error_message = "tier must be BASIC or STANDARD_HA."
  }
}

variable "memory_size_gb" {
  type        = number
  description = "Capacity in GiB. Redis keeps every row in memory: size it for all entities' long-term rows."
  default     = 1
}

variable "redis_version" {
  type        = string
  description = "Redis version (the store's Lua guard needs 6.0 or newer)."
  default     = "REDIS_7_2"
}

variable "rdb_snapshot_period" {
  type        = string
  description = "RDB persistence period (ONE_HOUR, SIX_HOURS, TWELVE_HOURS, TWENTY_FOUR_HOURS). null disables persistence."
  default     = "ONE_HOUR"
}

variable "ca_path" {
  type        = string
  description = "Where the workers' image holds the instance's CA (server_ca_cert), added to the URI as ssl_ca_certs; null trusts the system's CAs, which do not include it."
  default     = null
}

variable "uri_secret_id" {
  type        = string
  description = "Secret Manager secret id for the store URI. null derives it from name."
  default     = null
}

variable "rotation" {
  type        = number
  description = "Generation of the URI secret's value: change it after rotating the AUTH string to write the new URI (write-only, never in state)."
  default     = 1
}

variable "worker_service_account" {
  type        = string
  description = "Email of the Dataflow worker service account to grant read access to the URI secret. null grants nothing."
  default     = null
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key for the instance's data (CMEK), in its region; null uses Google-managed keys. Fixed at creation; the Memorystore service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
  default     = null
}

variable "labels" {
  type        = map(string)
  description = "Labels applied to the instance and the secret."
  default     = {}
}
