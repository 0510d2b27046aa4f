{%- set write_only = cookiecutter.longterm_backend in ("postgres", "redis") -%}
terraform {
{%- if write_only %}
  # The store module writes its URI secret with write-only arguments.
  required_version = ">= 1.11"
{%- else %}
  required_version = ">= 1.5"
{%- endif %}

  # State goes to a GCS bucket you create once, private and versioned, e.g.
  #   gcloud storage buckets create gs://{{ cookiecutter.gcp_project }}-tfstate \
  #     --location={{ cookiecutter.gcp_region }} --uniform-bucket-level-access \
  #     --public-access-prevention
  #   gcloud storage buckets update gs://{{ cookiecutter.gcp_project }}-tfstate --versioning
  # (or beam-agents' infra/bootstrap), then
  #   terraform -chdir=infra init -backend-config="bucket={{ cookiecutter.gcp_project }}-tfstate"
  # The state holds what the providers read back (e.g. a Redis AUTH string): only the
  # project's operators may read that bucket.
  backend "gcs" {
    prefix = "{{ cookiecutter.project_slug }}"
  }

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0, < 7.0"
    }
  }
}
