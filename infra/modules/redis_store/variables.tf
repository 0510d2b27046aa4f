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

variable "labels" {
  type        = map(string)
  description = "Labels applied to the instance."
  default     = {}
}
