locals {
  database = var.create_database ? google_firestore_database.this[0].name : var.database_name
  # The field the store writes a record's embedding to, as a Firestore vector value.
  vector_field = "embedding"
}

resource "google_firestore_database" "this" {
  count = var.create_database ? 1 : 0

  project                 = var.project_id
  name                    = var.database_name
  location_id             = var.location_id
  type                    = "FIRESTORE_NATIVE"
  concurrency_mode        = "PESSIMISTIC"
  deletion_policy         = var.deletion_policy
  delete_protection_state = var.deletion_policy == "ABANDON" ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"

  # Any document can be read as it was at any minute of the last 7 days.
  point_in_time_recovery_enablement = "POINT_IN_TIME_RECOVERY_ENABLED"

  dynamic "cmek_config" {
    for_each = var.kms_key_name == null ? [] : [var.kms_key_name]
    content {
      kms_key_name = cmek_config.value
    }
  }
}

# Daily backups of the whole database, kept for backup_retention: what is left when
# point-in-time recovery's 7 days are not enough.
resource "google_firestore_backup_schedule" "daily" {
  count = var.backup_retention == null ? 0 : 1

  project   = var.project_id
  database  = local.database
  retention = var.backup_retention

  daily_recurrence {}
}

# The store's prefix search is `entity == E AND key >= P AND key < upper ORDER BY key`:
# an equality plus a range needs this composite index. The emulator does not enforce
# it; production rejects the query without it (FAILED_PRECONDITION).
resource "google_firestore_index" "entity_key" {
  project     = var.project_id
  database    = local.database
  collection  = var.collection
  query_scope = "COLLECTION"

  fields {
    field_path = "entity"
    order      = "ASCENDING"
  }

  fields {
    field_path = "key"
    order      = "ASCENDING"
  }
}

# Recall across entities is a nearest-neighbour query (find_nearest, cosine) on the field
# the store writes each record's embedding to, pre-filtered on the embedder (`model` and
# `dims` equal to the query's), so vectors of two embedders are never compared. Firestore
# serves it only from a composite vector index with those fields and the query's
# dimension, and fails the query without one. Flat: exact distances, nothing to tune. The
# API stores `__name__` ascending before the vector field whether or not it is declared;
# declaring it keeps Terraform from seeing a difference.
resource "google_firestore_index" "embedding" {
  count = var.embedding_dimensions == null ? 0 : 1

  project     = var.project_id
  database    = local.database
  collection  = var.collection
  query_scope = "COLLECTION"

  fields {
    field_path = "model"
    order      = "ASCENDING"
  }

  fields {
    field_path = "dims"
    order      = "ASCENDING"
  }

  fields {
    field_path = "__name__"
    order      = "ASCENDING"
  }

  fields {
    field_path = local.vector_field

    vector_config {
      dimension = var.embedding_dimensions
      flat {}
    }
  }
}

resource "google_firestore_field" "expire_at" {
  count = var.ttl_enabled ? 1 : 0

  project    = var.project_id
  database   = local.database
  collection = var.collection
  field      = "expire_at"

  ttl_config {}

  # A monotonically increasing timestamp field indexed by default hot-spots writes;
  # the TTL policy does not need the index.
  index_config {}
}

resource "google_project_iam_member" "worker" {
  count = var.worker_service_account == null ? 0 : 1

  project = var.project_id
  role    = "roles/datastore.user"
  member  = "serviceAccount:${var.worker_service_account}"

  condition {
    title       = "beam-agents-${replace(local.database, "/[()]/", "")}"
    description = "Only the beam-agents long-term memory database."
    expression  = "resource.name == \"projects/${var.project_id}/databases/${local.database}\""
  }
}
