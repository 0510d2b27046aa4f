provider "google" {
  project = var.project_id
}

# The bucket every example's (and a generated project's) `backend "gcs"` keeps its state
# in. State holds what the providers read back, such as a Redis AUTH string, so the
# bucket is private, versioned (an older state can be restored after a bad apply) and,
# with kms_key_name, encrypted with your key. This root module itself keeps its own small
# state locally: it holds no secret.
resource "google_storage_bucket" "state" {
  project                     = var.project_id
  name                        = var.bucket_name
  location                    = var.location
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  versioning {
    enabled = true
  }

  # Superseded states are kept for a while, not forever.
  lifecycle_rule {
    condition {
      num_newer_versions = var.state_versions_kept
      with_state         = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }

  dynamic "encryption" {
    for_each = var.kms_key_name == null ? [] : [var.kms_key_name]
    content {
      default_kms_key_name = encryption.value
    }
  }
}

resource "google_storage_bucket_iam_member" "operators" {
  for_each = toset(var.operators)

  bucket = google_storage_bucket.state.name
  role   = "roles/storage.objectUser"
  member = each.value
}
