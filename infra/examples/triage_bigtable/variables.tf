variable "project_id" {
  type        = string
  description = "Project to deploy into."
}

variable "region" {
  type        = string
  description = "Region of the Dataflow job and its resources."
  default     = "europe-west1"
}

variable "model" {
  type        = string
  description = "The triage agent's --model spec (never a key: name a secret with api_key_secret=)."
  default     = "fake"
}

variable "image_tag" {
  type        = string
  description = "Tag of the image make deploy pushed; set it to let Terraform own the streaming job. null: no job."
  default     = null
}

variable "max_workers" {
  type        = number
  description = "Upper bound of the job's autoscaling; null lets Dataflow choose."
  default     = null
}

variable "launcher_members" {
  type        = list(string)
  description = "IAM members allowed to launch the triage job as its worker service account."
  default     = []
}

variable "zone" {
  type        = string
  description = "Zone of the Bigtable cluster. null means the region's \"-b\" zone."
  default     = null
}

variable "memory_max_age" {
  type        = string
  description = "Retention of long-term memory cells (e.g. \"2160h\"); null keeps them."
  default     = null
}

variable "deletion_protection" {
  type        = bool
  description = "Protect the Bigtable instance and table from terraform destroy."
  default     = true
}
