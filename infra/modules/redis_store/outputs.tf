output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory: secretmanager://VERSION, the secret version holding rediss://:AUTH@HOST:PORT/0[?ssl_ca_certs=ca_path], read where the store opens."
  value       = "secretmanager://${google_secret_manager_secret_version.uri.name}"
}

output "longterm_secret_id" {
  description = "Secret Manager secret (projects/P/secrets/S) holding the store URI with the AUTH string."
  value       = google_secret_manager_secret.uri.id
}

output "auth_string" {
  description = "Redis AUTH string."
  value       = google_redis_instance.this.auth_string
  sensitive   = true
}

output "host" {
  description = "Private IP address of the instance."
  value       = google_redis_instance.this.host
}

output "port" {
  description = "TLS port of the instance (6378 with in-transit encryption)."
  value       = google_redis_instance.this.port
}

output "server_ca_cert" {
  description = "PEM of the server CA that signs the instance's TLS certificate; install it where the workers verify TLS."
  value       = google_redis_instance.this.server_ca_certs[0].cert
}
