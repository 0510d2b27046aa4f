{%- set backend = cookiecutter.longterm_backend -%}
variable "project_id" {
  type        = string
  description = "Project to deploy into."
  default     = "{{ cookiecutter.gcp_project }}"
}

variable "region" {
  type        = string
  description = "Region of the Dataflow job and its resources."
  default     = "{{ cookiecutter.gcp_region }}"
}

variable "launcher_members" {
  type        = list(string)
  description = "IAM members allowed to build the image and launch the job as the build and worker service accounts."
  default     = []
}

variable "subnet_cidr" {
  type        = string
  description = "CIDR range of the Dataflow workers' subnetwork (private IPs only)."
  default     = "10.10.0.0/20"
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key (CMEK) for the buckets, image repository, topics and store; null uses Google-managed keys. The services' agents need roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
  default     = null
}
{%- if cookiecutter.include_hitl == "yes" %}

variable "approvers" {
  type        = list(string)
  description = "IAM members who may publish answers: roles/pubsub.publisher on the answers topic alone."
  default     = []
}

variable "answer_signers" {
  type        = list(string)
  description = "IAM members who sign answers, e.g. the identity beam-agents console runs as: roles/secretmanager.secretAccessor on the answer signing secret alone."
  default     = []
}
{%- endif %}
{%- if backend == "firestore" %}

variable "embedding_dimensions" {
  type        = number
  description = "Dimensions of the embedder's vectors (AgentConfig.embedder), for the Firestore vector index recall across entities needs; 384 for the local all-MiniLM-L6-v2. null: no vector index."
  default     = 384
}
{%- endif %}
{%- if backend in ("postgres", "bigtable") %}

variable "deletion_protection" {
  type        = bool
  description = "Protect the long-term store from terraform destroy."
  default     = true
}
{%- endif %}

