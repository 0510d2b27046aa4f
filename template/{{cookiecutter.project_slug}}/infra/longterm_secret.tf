# The {{ cookiecutter.longterm_backend }} store URI carries a password, so it is never a job
# parameter (anyone who can view the job reads those): it lives in this secret, only the
# worker service account (which the Flex Template launcher also runs as) may read it, and
# `make deploy` passes only the version's resource name, as --longterm_secret.
resource "google_secret_manager_secret" "longterm" {
  project   = var.project_id
  secret_id = "${local.name}-longterm"

  replication {
    auto {}
  }

  depends_on = [google_project_service.this]
}

# secret_data is sensitive: Terraform never prints it (it is in the state, like the
# password the store module generates).
resource "google_secret_manager_secret_version" "longterm" {
  secret      = google_secret_manager_secret.longterm.id
  secret_data = sensitive(module.memory.longterm_memory)
}

resource "google_secret_manager_secret_iam_member" "longterm_accessor" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.longterm.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${module.runtime.service_account_email}"
}
