resource "google_redis_instance" "this" {
  project        = var.project_id
  region         = var.region
  name           = var.name
  tier           = var.tier
  memory_size_gb = var.memory_size_gb
  redis_version  = var.redis_version
  labels         = var.labels

  # Reachable only from the VPC, through private service access.
  authorized_network = var.authorized_network
  connect_mode       = "PRIVATE_SERVICE_ACCESS"
  reserved_ip_range  = var.reserved_ip_range

  # AUTH plus TLS: the client must present the auth string and trust the server CA.
  auth_enabled            = true
  transit_encryption_mode = "SERVER_AUTHENTICATION"
  customer_managed_key    = var.kms_key_name

  dynamic "persistence_config" {
    for_each = var.rdb_snapshot_period == null ? [] : [var.rdb_snapshot_period]
    content {
      persistence_mode    = "RDB"
      rdb_snapshot_period = persistence_config.value
    }
  }
}

# The store URI, AUTH string included, for the workers to read when they open the store
# (secretmanager:// in longterm_memory). The instance's own state holds the AUTH string
# (the provider reads it back); the URI is written here write-only, so it adds no copy.
resource "google_secret_manager_secret" "uri" {
  project   = var.project_id
  secret_id = coalesce(var.uri_secret_id, "${var.name}-longterm")
  labels    = var.labels

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_version" "uri" {
  secret                 = google_secret_manager_secret.uri.id
  secret_data_wo         = "rediss://:${urlencode(google_redis_instance.this.auth_string)}@${google_redis_instance.this.host}:${google_redis_instance.this.port}/0${var.ca_path == null ? "" : "?ssl_ca_certs=${urlencode(var.ca_path)}"}"
  secret_data_wo_version = var.rotation
}

resource "google_secret_manager_secret_iam_member" "worker" {
  count = var.worker_service_account == null ? 0 : 1

  project   = var.project_id
  secret_id = google_secret_manager_secret.uri.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${var.worker_service_account}"
}
