locals {
  secret_id = coalesce(var.password_secret_id, "${var.instance_name}-db-password")
}

resource "google_sql_database_instance" "this" {
  project             = var.project_id
  region              = var.region
  name                = var.instance_name
  database_version    = var.database_version
  deletion_protection = var.deletion_protection

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
    }

    backup_configuration {
      enabled                        = true
      point_in_time_recovery_enabled = true
    }
  }
}

resource "google_sql_database" "this" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = var.database_name
}

# Alphanumeric only: the password goes into a URL, where `@`, `:` and `/` would need escaping.
resource "random_password" "user" {
  length  = 32
  special = false
}

resource "google_sql_user" "this" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = var.user_name
  password = random_password.user.result
}

resource "google_secret_manager_secret" "password" {
  project   = var.project_id
  secret_id = local.secret_id
  labels    = var.labels

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_version" "password" {
  secret      = google_secret_manager_secret.password.id
  secret_data = random_password.user.result
}

resource "google_secret_manager_secret_iam_member" "worker" {
  count = var.worker_service_account == null ? 0 : 1

  project   = var.project_id
  secret_id = google_secret_manager_secret.password.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${var.worker_service_account}"
}
