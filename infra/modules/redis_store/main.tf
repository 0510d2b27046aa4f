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

  dynamic "persistence_config" {
    for_each = var.rdb_snapshot_period == null ? [] : [var.rdb_snapshot_period]
    content {
      persistence_mode    = "RDB"
      rdb_snapshot_period = persistence_config.value
    }
  }
}
