output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory: secretmanager://VERSION, the secret version holding postgresql+asyncpg://USER:PASS@PRIVATE_IP:5432/DB?ssl=verify-ca, read where the store opens. Run `beam-agents provision` on it once."
  value       = "secretmanager://${google_secret_manager_secret_version.uri.name}"
}

output "longterm_secret_id" {
  description = "Secret Manager secret (projects/P/secrets/S) holding the store URI with its password."
  value       = google_secret_manager_secret.uri.id
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
  description = "Database user name."
  value       = google_sql_user.this.name
}
