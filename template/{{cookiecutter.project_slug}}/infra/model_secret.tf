# The {{ cookiecutter.model_provider }} API key lives in Secret Manager, never in Terraform state:
# add it as a version once (make deploy reads the latest), e.g.
#   printf %s "$KEY" | gcloud secrets versions add SECRET --data-file=-
# with SECRET from `terraform -chdir=infra output -raw model_api_key_secret_id`.
resource "google_secret_manager_secret" "model_api_key" {
  project   = var.project_id
  secret_id = "${local.name}-model-api-key"

  replication {
    auto {}
  }

  depends_on = [google_project_service.this]
}

# The worker service account reads it; the Flex Template launcher runs as that account too.
resource "google_secret_manager_secret_iam_member" "model_api_key_accessor" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.model_api_key.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${module.runtime.service_account_email}"
}
