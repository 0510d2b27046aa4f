terraform {
  # Secret Manager versions (the entity hashing key{% if cookiecutter.include_hitl == "yes" %}, the answer signing key{% endif %}{% if cookiecutter.longterm_backend in ("postgres", "redis") %}, the store's{% endif %})
  # are written with write-only arguments, which never enter state.
  required_version = ">= 1.11"

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
    random = {
      source  = "hashicorp/random"
      version = ">= 3.7, < 4.0"
    }
  }
}
