variable "project_id" {
  type        = string
  description = "Project to deploy into."
}

variable "region" {
  type        = string
  description = "Region of the Dataflow job and its resources."
}

variable "store" {
  type        = string
  description = "The long-term store the caller composes (the image's store extra); picks the APIs to enable."

  validation {
    condition     = contains(["bigtable", "firestore", "postgres", "redis"], var.store)
    error_message = "store must be bigtable, firestore, postgres or redis."
  }
}

variable "longterm_memory" {
  type        = string
  description = "Store URI without a credential; the job gets it as its longterm parameter. null: pass longterm_memory_secret."
  default     = null
}

variable "longterm_memory_secret" {
  type        = string
  description = "Store URI that carries a credential (used when longterm_memory is null): kept in Secret Manager, the job gets the version's name."
  default     = null
  sensitive   = true
}

variable "model" {
  type        = string
  description = "The triage agent's --model spec, e.g. openai:gpt-4o-mini?api_key_secret=projects/P/secrets/triage-model/versions/latest."
  default     = "fake"

  validation {
    condition     = !can(regex("(?i)(api_key|token|password)=", var.model))
    error_message = "model must not carry a key: name a Secret Manager version with api_key_secret= instead."
  }
}

variable "image_tag" {
  type        = string
  description = "Tag of the image make deploy pushed; set it to let Terraform own the streaming job. null: no job."
  default     = null
}

variable "subnet_cidr" {
  type        = string
  description = "CIDR range of the workers' subnetwork in a VPC with private service access, for a store on a private IP. null: no VPC, the workers use the default network."
  default     = null

  validation {
    condition     = var.subnet_cidr == null || can(cidrhost(var.subnet_cidr, 0))
    error_message = "subnet_cidr must be a CIDR range such as 10.10.0.0/20, or null."
  }
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
