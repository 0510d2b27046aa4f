variable "project_id" {
  type        = string
  description = "Project to deploy into."
}

variable "region" {
  type        = string
  description = "Region of the Dataflow job and its resources."
  default     = "europe-west1"
}

variable "otlp_endpoint" {
  type        = string
  description = "OTLP/HTTP endpoint the workers export spans to (a collector in the workers' network); null: none."
  default     = null
}

variable "model" {
  type        = string
  description = "The triage agent's --model spec (never a key: name a secret with api_key_secret=)."
  default     = "fake"
}

variable "image_digest" {
  type        = string
  description = "Digest (sha256:HEX) of the image make deploy pushed; set it to let Terraform own the streaming job. null: no job."
  default     = null
}

variable "max_workers" {
  type        = number
  description = "Upper bound of the job's autoscaling; null lets Dataflow choose."
  default     = null
}

variable "launcher_members" {
  type        = list(string)
  description = "IAM members allowed to build the image and launch the triage job as the build and worker service accounts."
  default     = []
}

variable "approvers" {
  type        = list(string)
  description = "IAM members who may publish approval answers (roles/pubsub.publisher on the answers topic alone)."
  default     = []
}

variable "answer_signers" {
  type        = list(string)
  description = "IAM members who sign approval answers, e.g. the console's runner service account (roles/secretmanager.secretAccessor on the answer signing secret alone)."
  default     = []
}

variable "alert_publishers" {
  type        = list(string)
  description = "IAM members who may publish alerts (roles/pubsub.publisher on the alerts topic alone)."
  default     = []
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key (CMEK) for the store, buckets, image repository, topics and job; null uses Google-managed keys. See docs/deploy.md, Security."
  default     = null
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

variable "embedding_dimensions" {
  type        = number
  description = "Dimensions of the embedder's vectors, for the vector index recall across entities needs (384: the local all-MiniLM-L6-v2); null: no vector index."
  default     = 384
}

variable "subnet_cidr" {
  type        = string
  description = "CIDR range of the Dataflow workers' subnetwork."
  default     = "10.10.0.0/20"
}
