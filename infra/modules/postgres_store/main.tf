locals {
  secret_id = coalesce(var.uri_secret_id, "${var.instance_name}-longterm")
  # Workers sign in with IAM unless auth_mode is password: a service account's database user is
  # its email without .gserviceaccount.com, percent-encoded in the store URI.
  worker_iam = var.auth_mode == "iam" && var.worker_service_account != null
  worker_db  = var.worker_service_account == null ? "" : trimsuffix(var.worker_service_account, ".gserviceaccount.com")
  passwords  = var.auth_mode == "password" ? 1 : 0
  # In the URI's userinfo the user's own @ is percent-encoded.
  worker_db_in_uri = replace(local.worker_db, "@", "%40")
  instance_res     = "projects/${var.project_id}/instances/${var.instance_name}"
  # The CIS Google Cloud benchmark's PostgreSQL flags (log what happens, audit DDL and
  # roles), plus IAM database authentication for people and service accounts.
  database_flags = {
    "cloudsql.iam_authentication" = "on"
    "cloudsql.enable_pgaudit"     = "on"
    "pgaudit.log"                 = "ddl,role"
    "log_checkpoints"             = "on"
    "log_connections"             = "on"
    "log_disconnections"          = "on"
    "log_lock_waits"              = "on"
    "log_error_verbosity"         = "default"
    "log_min_error_statement"     = "error"
    "log_min_messages"            = "warning"
    "log_min_duration_statement"  = "-1"
    "log_statement"               = "ddl"
    "log_temp_files"              = "0"
  }
  # user:a@example.com -> CLOUD_IAM_USER a@example.com; serviceAccount:sa@p.iam.gserviceaccount.com
  # -> CLOUD_IAM_SERVICE_ACCOUNT sa@p.iam (Cloud SQL drops the domain suffix).
  iam_users = {
    for member in var.iam_users : member => {
      type = startswith(member, "serviceAccount:") ? "CLOUD_IAM_SERVICE_ACCOUNT" : "CLOUD_IAM_USER"
      name = trimsuffix(split(":", member)[1], ".gserviceaccount.com")
    }
  }
}

resource "google_sql_database_instance" "this" {
  project             = var.project_id
  region              = var.region
  name                = var.instance_name
  database_version    = var.database_version
  deletion_protection = var.deletion_protection
  encryption_key_name = var.kms_key_name

  settings {
    # Enterprise Plus (the default for new PostgreSQL 16 instances) only takes
    # db-perf-optimized tiers; pin the edition the tier names above belong to.
    edition           = "ENTERPRISE"
    tier              = var.tier
    availability_type = var.availability_type
    disk_type         = "PD_SSD"
    disk_size         = var.disk_size_gb
    disk_autoresize   = true
    user_labels       = var.labels

    ip_configuration {
      ipv4_enabled       = false
      private_network    = var.private_network
      allocated_ip_range = var.allocated_ip_range
      ssl_mode           = "ENCRYPTED_ONLY"
      # A CA of this instance's own: a client that verifies the chain against it
      # (sslmode verify-ca) can only be talking to this instance.
      server_ca_mode = "GOOGLE_MANAGED_INTERNAL_CA"
    }

    backup_configuration {
      enabled                        = true
      point_in_time_recovery_enabled = true
    }

    dynamic "database_flags" {
      for_each = local.database_flags
      content {
        name  = database_flags.key
        value = database_flags.value
      }
    }
  }
}

resource "google_sql_database" "this" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = var.database_name
}

# IAM database authentication for the workers (the default): no password exists. The
# Cloud SQL connector signs in as the worker's service account with a short-lived token.
resource "google_sql_user" "worker" {
  count = local.worker_iam ? 1 : 0

  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = local.worker_db
  type     = "CLOUD_IAM_SERVICE_ACCOUNT"
}

# The connector needs cloudsql.client (the Admin API's ephemeral certificate) and
# cloudsql.instanceUser (the IAM sign-in), both limited to this instance by a condition.
resource "google_project_iam_member" "worker_sql" {
  for_each = local.worker_iam ? toset(["roles/cloudsql.client", "roles/cloudsql.instanceUser"]) : toset([])

  project = var.project_id
  role    = each.value
  member  = "serviceAccount:${var.worker_service_account}"

  condition {
    title      = "only-${var.instance_name}"
    expression = "resource.name == \"${local.instance_res}\""
  }
}

# --- the fallback: a built-in password user (auth_mode = "password") -------------------

# Made afresh on every plan and never written to state: the password reaches Cloud SQL
# and the URI secret only through write-only arguments, sent when `rotation` changes.
# Alphanumeric only: it goes into a URL, where `@`, `:` and `/` would need escaping.
ephemeral "random_password" "user" {
  count = local.passwords

  length  = 32
  special = false
}

# The built-in user the store connects as (asyncpg needs a password; IAM database
# authentication needs the Cloud SQL connector).
resource "google_sql_user" "this" {
  count = local.passwords

  project             = var.project_id
  instance            = google_sql_database_instance.this.name
  name                = var.user_name
  password_wo         = ephemeral.random_password.user[0].result
  password_wo_version = var.rotation
}

# People and service accounts that sign in with IAM (gcloud sql connect, the Auth Proxy
# with --auto-iam-authn) instead of a password.
resource "google_sql_user" "iam" {
  for_each = local.iam_users

  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = each.value.name
  type     = each.value.type
}

# The store URI, password included, lives only here: the workers read it when they open
# the store (secretmanager:// in longterm_memory). `ssl=verify-ca` checks the server's
# certificate against the instance's CA, which the image carries (PGSSLROOTCERT).
resource "google_secret_manager_secret" "uri" {
  count = local.passwords

  project   = var.project_id
  secret_id = local.secret_id
  labels    = var.labels

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_version" "uri" {
  count = local.passwords

  secret                 = google_secret_manager_secret.uri[0].id
  secret_data_wo         = "postgresql+asyncpg://${google_sql_user.this[0].name}:${ephemeral.random_password.user[0].result}@${google_sql_database_instance.this.private_ip_address}:5432/${google_sql_database.this.name}?ssl=verify-ca"
  secret_data_wo_version = var.rotation
}

resource "google_secret_manager_secret_iam_member" "worker" {
  count = var.auth_mode == "password" && var.worker_service_account != null ? 1 : 0

  project   = var.project_id
  secret_id = google_secret_manager_secret.uri[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${var.worker_service_account}"
}
