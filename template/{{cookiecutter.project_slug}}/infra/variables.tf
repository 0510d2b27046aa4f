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
  description = "IAM members allowed to launch the job as its worker service account."
  default     = []
}
{%- if backend in ("postgres", "bigtable") %}

variable "deletion_protection" {
  type        = bool
  description = "Protect the long-term store from terraform destroy."
  default     = true
}
{%- endif %}
{%- if backend in ("postgres", "redis") %}

variable "subnet_cidr" {
  type        = string
  description = "CIDR range of the Dataflow workers' subnetwork."
  default     = "10.10.0.0/20"
}
{%- endif %}
