# A key nobody chooses: drawn ephemeral on the first apply and written write-only, so
# it never enters Terraform state. Callers hand the version's name (not `latest`) to
# the job, so every worker of a job reads the same key; `generation` moves it on.
ephemeral "random_password" "this" {
  length  = var.length
  special = false
}

resource "google_secret_manager_secret" "this" {
  project   = var.project_id
  secret_id = var.secret_id

  replication {
    auto {
      dynamic "customer_managed_encryption" {
        for_each = var.kms_key_name == null ? [] : [var.kms_key_name]
        content {
          kms_key_name = customer_managed_encryption.value
        }
      }
    }
  }
}

resource "google_secret_manager_secret_version" "this" {
  secret                 = google_secret_manager_secret.this.id
  secret_data_wo         = ephemeral.random_password.this.result
  secret_data_wo_version = var.generation
}

# The workers read the key; so does each of `readers` (e.g. whoever signs with it), and
# nobody else.
resource "google_secret_manager_secret_iam_member" "worker" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.this.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${var.worker_service_account}"
}

resource "google_secret_manager_secret_iam_member" "reader" {
  for_each = toset(var.readers)

  project   = var.project_id
  secret_id = google_secret_manager_secret.this.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = each.value
}
