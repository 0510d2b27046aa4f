output "secret_id" {
  description = "Secret Manager secret id (the short name)."
  value       = google_secret_manager_secret.this.secret_id
}

output "version_name" {
  description = "Name of the key's version (projects/P/secrets/S/versions/N): what the job's parameter and the console take. Not the key itself."
  value       = google_secret_manager_secret_version.this.name
}
