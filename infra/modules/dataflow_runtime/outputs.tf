output "service_account_email" {
  description = "Worker service account; pass it to --service_account_email and to the store modules."
  value       = google_service_account.worker.email
}

output "staging_location" {
  description = "gs:// path for --staging_location and Flex Template specs."
  value       = "gs://${google_storage_bucket.staging.name}/staging"
}

output "temp_location" {
  description = "gs:// path for --temp_location (objects expire after temp_retention_days)."
  value       = "gs://${google_storage_bucket.temp.name}/tmp"
}

output "template_path" {
  description = "gs:// path where the Flex Template spec is built (gcloud dataflow flex-template build)."
  value       = "gs://${google_storage_bucket.staging.name}/templates/${var.name}.json"
}

output "image_repository" {
  description = "Docker repository URL for the Flex Template image: REGION-docker.pkg.dev/PROJECT/REPO."
  value       = "${var.region}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
}

output "model_secret_id" {
  description = "Secret Manager secret (projects/P/secrets/S) for the model API key; the worker may access it."
  value       = google_secret_manager_secret.model.id
}

output "topics" {
  description = "Topic id (projects/P/topics/T) per name: the inputs, the outputs and dead-letter."
  value       = { for key, topic in google_pubsub_topic.this : key => topic.id }
}

output "subscriptions" {
  description = "Subscription id (projects/P/subscriptions/S) per topic name."
  value       = { for key, sub in google_pubsub_subscription.this : key => sub.id }
}
