locals {
  instance_name = var.create_instance ? google_bigtable_instance.this[0].name : var.instance_name
  member        = var.worker_service_account == null ? null : "serviceAccount:${var.worker_service_account}"

  # One version per column: every guarded upsert writes new cells for `seq` and `rec`,
  # and without this rule Bigtable would keep all of them forever. With max_age the
  # two rules form a union: a cell goes when it is superseded OR older than max_age.
  gc_rules = var.max_age == null ? jsonencode({
    rules = [{ max_version = 1 }]
    }) : jsonencode({
    mode  = "union"
    rules = [{ max_version = 1 }, { max_age = var.max_age }]
  })
}

resource "google_bigtable_instance" "this" {
  count = var.create_instance ? 1 : 0

  project             = var.project_id
  name                = var.instance_name
  deletion_protection = var.deletion_protection
  labels              = var.labels

  cluster {
    cluster_id   = "${substr(var.instance_name, 0, 27)}-c1" # cluster ids are at most 30 chars
    zone         = var.zone
    num_nodes    = var.num_nodes
    storage_type = var.storage_type
    kms_key_name = var.kms_key_name
  }

  lifecycle {
    precondition {
      condition     = var.zone != null
      error_message = "zone is required when create_instance is true."
    }
  }
}

resource "google_bigtable_table" "memory" {
  project             = var.project_id
  instance_name       = local.instance_name
  name                = var.table_name
  deletion_protection = var.deletion_protection ? "PROTECTED" : "UNPROTECTED"

  # Family `m` holds the `seq` (8-byte big-endian) and `rec` (envelope) columns.
  column_family {
    family = "m"
  }

  # Bigtable's own table backups, taken every `backup_frequency` and kept for
  # `backup_retention`: the way back from a bad deploy that wrote wrong memories.
  dynamic "automated_backup_policy" {
    for_each = var.backup_retention == null ? [] : [var.backup_retention]
    content {
      retention_period = automated_backup_policy.value
      frequency        = var.backup_frequency
    }
  }
}

resource "google_bigtable_gc_policy" "memory" {
  project       = var.project_id
  instance_name = local.instance_name
  table         = google_bigtable_table.memory.name
  column_family = "m"
  gc_rules      = local.gc_rules

  # A GC policy cannot be deleted on a replicated instance; dropping the table removes it.
  deletion_policy = "ABANDON"
}

resource "google_bigtable_table_iam_member" "worker" {
  count = local.member != null && var.iam_scope == "table" ? 1 : 0

  project       = var.project_id
  instance_name = local.instance_name
  table         = google_bigtable_table.memory.name
  role          = "roles/bigtable.user"
  member        = local.member
}

resource "google_bigtable_instance_iam_member" "worker" {
  count = local.member != null && var.iam_scope == "instance" ? 1 : 0

  project  = var.project_id
  instance = local.instance_name
  role     = "roles/bigtable.user"
  member   = local.member
}
