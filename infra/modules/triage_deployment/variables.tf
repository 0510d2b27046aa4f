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
  description = "The store module's longterm_memory output: a URI without a credential, or secretmanager://VERSION for a store whose URI has one. The job gets it as its longterm parameter."

  validation {
    condition     = !can(regex("^[a-z0-9+]+://[^/?#@]*:[^/?#]*@", var.longterm_memory)) && !can(regex("(?i)[?&;](?:access[-_]token|api[-_]key|apikey|auth|auth[-_]token|authorization|client[-_]secret|cookie|credential|credentials|id[-_]token|key|pass|passwd|password|pwd|refresh[-_]token|secret|sig|signature|token|x[-_]amz[-_]credential|x[-_]amz[-_]security[-_]token|x[-_]amz[-_]signature|x[-_]goog[-_]credential|x[-_]goog[-_]signature|[A-Za-z0-9._~-]*(?:[-_]token|password|[-_]signature|[-_]api[-_]key|apikey|secret[-_]key|access[-_]key|private[-_]key|signing[-_]key|encryption[-_]key|master[-_]key|account[-_]key|[-_]auth|[-_]authorization|[-_]cookie|[-_]passwd|[-_]pwd|[-_]pass))=", var.longterm_memory))
    error_message = "longterm_memory must not carry a credential: keep such a URI in Secret Manager and pass secretmanager://projects/P/secrets/S/versions/V."
  }
}

variable "otlp_endpoint" {
  type        = string
  description = "OTLP/HTTP endpoint every worker exports its spans to, e.g. http://10.128.0.9:4318/v1/traces (a collector the workers' subnetwork reaches, holding any credentials). null: no export."
  default     = null

  validation {
    condition     = var.otlp_endpoint == null || can(regex("^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$", var.otlp_endpoint))
    error_message = "otlp_endpoint must be an http(s) URL without user:password@ or a query string: job parameters are visible to job viewers."
  }
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

variable "image_digest" {
  type        = string
  description = "Digest (sha256:HEX) of the image make deploy pushed; set it to let Terraform own the streaming job. null: no job."
  default     = null

  validation {
    condition     = var.image_digest == null || can(regex("^sha256:[0-9a-f]{64}$", var.image_digest))
    error_message = "image_digest must be sha256:<64 hex digits> (make deploy prints it), or null."
  }
}

variable "subnet_cidr" {
  type        = string
  description = "CIDR range of the workers' subnetwork (private IPs only, Private Google Access)."
  default     = "10.10.0.0/20"

  validation {
    condition     = can(cidrhost(var.subnet_cidr, 0))
    error_message = "subnet_cidr must be a CIDR range such as 10.10.0.0/20."
  }
}

variable "enable_nat" {
  type        = bool
  description = "Give the workers Cloud NAT egress. null decides from model: on unless the model is fake, rules or gemini: (a Google API, reached through Private Google Access)."
  default     = null
}

variable "flow_log_sampling" {
  type        = number
  description = "Share of the workers' network flows that VPC flow logs record (0 to 1)."
  default     = 0.5

  validation {
    condition     = var.flow_log_sampling >= 0 && var.flow_log_sampling <= 1
    error_message = "flow_log_sampling must be between 0 and 1."
  }
}

variable "approvers" {
  type        = list(string)
  description = "IAM members who may publish approval answers: roles/pubsub.publisher on the answers topic alone."
  default     = []
}

variable "answer_signers" {
  type        = list(string)
  description = "IAM members who sign approval answers, e.g. the console's runner service account: roles/secretmanager.secretAccessor on the triage-answer-signing secret alone (give them to approvers too, to publish)."
  default     = []
}

variable "alert_publishers" {
  type        = list(string)
  description = "IAM members (e.g. the monitoring system's service account) who may publish alerts: roles/pubsub.publisher on the alerts topic alone."
  default     = []
}

variable "kms_key_name" {
  type        = string
  description = "Cloud KMS key for the buckets, image repository, topics and the job; null uses Google-managed keys (see docs/deploy.md, Security)."
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
