output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory: postgresql+asyncpg://USER:PASS@PRIVATE_IP:5432/DB. Run `beam-agents provision` on it once."
  value       = "postgresql+asyncpg://${google_sql_user.this.name}:${urlencode(random_password.user.result)}@${google_sql_database_instance.this.private_ip_address}:5432/${google_sql_database.this.name}"
  sensitive   = true
}

output "private_ip" {
  description = "Private IP address of the instance."
  value       = google_sql_database_instance.this.private_ip_address
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

output "password_secret_id" {
  description = "Secret Manager secret (projects/P/secrets/S) holding the user's password."
  value       = google_secret_manager_secret.password.id
}
