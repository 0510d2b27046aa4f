variable "project_id" {
  type        = string
  description = "Project to deploy into."
}

variable "region" {
  type        = string
  description = "Region of the Dataflow job, the subnetwork and the Cloud SQL instance."
  default     = "europe-west1"
}

variable "subnet_cidr" {
  type        = string
  description = "CIDR range of the Dataflow workers' subnetwork."
  default     = "10.10.0.0/20"
}

variable "sql_tier" {
  type        = string
  description = "Cloud SQL machine tier."
  default     = "db-custom-1-3840"
}

variable "launcher_members" {
  type        = list(string)
  description = "IAM members allowed to launch the triage job as its worker service account."
  default     = []
}

variable "deletion_protection" {
  type        = bool
  description = "Protect the Cloud SQL instance from terraform destroy."
  default     = true
}
