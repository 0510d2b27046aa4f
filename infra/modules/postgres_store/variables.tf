variable "project_id" {
  type        = string
  description = "Project that holds the Cloud SQL instance."
}

variable "region" {
  type        = string
  description = "Region of the instance; use the Dataflow job's region."
}

variable "instance_name" {
  type        = string
  description = "Cloud SQL instance name (not reusable for about a week after deletion)."
  default     = "beam-agents-memory"
}

variable "private_network" {
  type        = string
  description = "VPC network id (projects/P/global/networks/N) with private service access; the instance gets no public IP."
}

variable "allocated_ip_range" {
  type        = string
  description = "Name of the private service access range to allocate the private IP from. null lets the service pick one."
  default     = null
}

variable "database_version" {
  type        = string
  description = "PostgreSQL major version."
  default     = "POSTGRES_16"

  validation {
    condition     = startswith(var.database_version, "POSTGRES_")
    error_message = "database_version must be a POSTGRES_* version."
  }
}

variable "tier" {
  type        = string
  description = "Machine tier (Enterprise edition), e.g. db-custom-1-3840 (1 vCPU, 3.75 GB) or db-custom-2-7680."
  default     = "db-custom-1-3840"
}

variable "availability_type" {
  type        = string
  description = "ZONAL or REGIONAL (a standby in another zone, about twice the cost)."
  default     = "ZONAL"

  validation {
    condition     = contains(["ZONAL", "REGIONAL"], var.availability_type)
    error_message = "availability_type must be ZONAL or REGIONAL."
  }
}

variable "disk_size_gb" {
  type        = number
  description = "Initial SSD size in GB; it grows automatically."
  default     = 10
}

variable "database_name" {
  type        = string
  description = "Database that holds the beam_agents_longterm table."
  default     = "beam_agents"
}

variable "auth_mode" {
  type        = string
  description = "How the workers sign in: iam (the default; IAM database authentication through the Cloud SQL connector, postgresql+cloudsql://, no password anywhere) or password (the fallback: a built-in user whose URI lives in Secret Manager)."
  default     = "iam"

  validation {
    condition     = contains(["iam", "password"], var.auth_mode)
    error_message = "auth_mode must be iam or password."
  }
}

variable "ip_type" {
  type        = string
  description = "Which address of the instance the Cloud SQL connector dials: private (the default), public or psc."
  default     = "private"

  validation {
    condition     = contains(["private", "public", "psc"], var.ip_type)
    error_message = "ip_type must be private, public or psc."
  }
}

variable "user_name" {
  type        = string
  description = "Built-in database user the workers connect as with auth_mode = password."
  default     = "beam_agents"
}

variable "uri_secret_id" {
  type        = string
  description = "Secret Manager secret id for the store URI (with the generated password) with auth_mode = password. null derives it from instance_name."
  default     = null
}

variable "rotation" {
  type        = number
  description = "Generation of the password: change it to make a new one and write it to the user and the URI secret (write-only, never in state)."
  default     = 1
}

variable "iam_users" {
  type        = list(string)
  description = "IAM principals (user:EMAIL or serviceAccount:EMAIL) who sign in with IAM database authentication; grant them database roles yourself."
  default     = []

  validation {
    condition     = alltrue([for m in var.iam_users : can(regex("^(user|serviceAccount):[^@\\s]+@[^@\\s]+$", m))])
    error_message = "iam_users entries must be user:EMAIL or serviceAccount:EMAIL."
  }
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key for the instance's disks and backups (CMEK), in the instance's region; null uses Google-managed keys. Fixed at creation; the Cloud SQL service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
  default     = null
}

variable "worker_service_account" {
  type        = string
  description = "Email of the Dataflow worker service account: it gets an IAM database user and roles/cloudsql.client + roles/cloudsql.instanceUser on this instance (or, with auth_mode = password, read access to the URI secret). Required unless auth_mode is password."
  default     = null

  validation {
    condition     = var.worker_service_account == null || can(regex("^[^@\\s]+@[^@\\s]+\\.iam\\.gserviceaccount\\.com$", var.worker_service_account))
    error_message = "worker_service_account must be a service account email (NAME@PROJECT.iam.gserviceaccount.com)."
  }
}

variable "deletion_protection" {
  type        = bool
  description = "Refuse to destroy the instance (set to false for throwaway environments)."
  default     = true
}

variable "labels" {
  type        = map(string)
  description = "User labels applied to the instance and the secret."
  default     = {}
}
