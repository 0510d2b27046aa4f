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

output "image_repository" {
  description = "Docker repository URL for the Flex Template image: REGION-docker.pkg.dev/PROJECT/REPO."
  value       = "${var.region}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
}

output "events_subscription" {
  description = "Subscription (projects/P/subscriptions/S) the pipeline reads events from."
  value       = google_pubsub_subscription.this["events"].id
}

output "events_topic" {
  description = "Topic producers publish events to."
  value       = google_pubsub_topic.this["events"].id
}

output "outputs_topic" {
  description = "Topic the pipeline publishes agent outputs to."
  value       = google_pubsub_topic.this["outputs"].id
}

output "errors_topic" {
  description = "Dead-letter topic the pipeline publishes ActivationError records to."
  value       = google_pubsub_topic.this["errors"].id
}

output "subscriptions" {
  description = "Subscription id per topic (events, outputs, errors)."
  value       = { for key, sub in google_pubsub_subscription.this : key => sub.id }
}
