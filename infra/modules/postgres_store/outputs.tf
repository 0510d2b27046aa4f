output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory: postgresql+cloudsql://WORKER%40PROJECT.iam@PROJECT:REGION:INSTANCE/DB?ip_type=IP_TYPE (IAM sign-in, no password), or with auth_mode = password secretmanager://VERSION, the secret version holding postgresql+asyncpg://USER:PASS@PRIVATE_IP:5432/DB?ssl=verify-ca. Run `beam-agents provision` on it once."
  value       = var.auth_mode == "password" ? "secretmanager://${google_secret_manager_secret_version.uri[0].name}" : "postgresql+cloudsql://${local.worker_db_in_uri}@${google_sql_database_instance.this.connection_name}/${google_sql_database.this.name}?ip_type=${var.ip_type}"
}

output "longterm_secret_id" {
  description = "Secret Manager secret (projects/P/secrets/S) holding the store URI with its password; null unless auth_mode is password."
  value       = var.auth_mode == "password" ? google_secret_manager_secret.uri[0].id : null
}

output "private_ip" {
  description = "Private IP address of the instance."
  value       = google_sql_database_instance.this.private_ip_address
}

output "server_ca_cert" {
  description = "PEM of the instance's server CA; put it where the workers verify TLS (PGSSLROOTCERT)."
  value       = google_sql_database_instance.this.server_ca_cert[0].cert
}

output "instance_connection_name" {
  description = "PROJECT:REGION:INSTANCE, for the Cloud SQL Auth Proxy (e.g. to run `beam-agents provision` from a workstation)."
  value       = google_sql_database_instance.this.connection_name
}

output "database" {
  description = "Database name."
  value       = google_sql_database.this.name
}

output "user" {
  description = "Database user the workers sign in as: the worker's IAM user, or the built-in user with auth_mode = password."
  value       = var.auth_mode == "password" ? google_sql_user.this[0].name : local.worker_db
}
