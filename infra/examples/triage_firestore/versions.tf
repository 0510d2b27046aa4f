terraform {
  # modules/triage_deployment writes the entity hashing key with write-only arguments.
  required_version = ">= 1.11"

  # State goes to a GCS bucket (uniform access, public access prevention, versioning):
  # create it once with infra/bootstrap, then
  #   terraform init -backend-config="bucket=$(terraform -chdir=../../bootstrap output -raw bucket)"
  # The state holds what the providers read back (e.g. a Redis AUTH string), so only the
  # deployment's operators may read the bucket.
  backend "gcs" {
    prefix = "beam-agents/triage_firestore"
  }

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0, < 7.0"
    }
    google-beta = {
      source  = "hashicorp/google-beta"
      version = ">= 6.0, < 7.0"
    }
  }
}
