output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory: rediss://:AUTH@HOST:PORT/0. Clients must trust server_ca_cert."
  value       = "rediss://:${urlencode(google_redis_instance.this.auth_string)}@${google_redis_instance.this.host}:${google_redis_instance.this.port}/0"
  sensitive   = true
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
