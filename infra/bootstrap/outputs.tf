output "bucket" {
  description = "Name of the state bucket: terraform init -backend-config=\"bucket=NAME\" in each example."
  value       = google_storage_bucket.state.name
}
