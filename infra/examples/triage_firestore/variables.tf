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

variable "firestore_location" {
  type        = string
  description = "Firestore location (a region or nam5/eur3); null uses var.region."
  default     = null
}

variable "ttl_enabled" {
  type        = bool
  description = "Delete long-term documents whose expire_at has passed (Firestore TTL policy)."
  default     = false
}
