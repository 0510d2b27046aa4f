output "service_account_email" {
  description = "Worker service account; pass it to --service_account_email and to the store modules."
  value       = google_service_account.worker.email
}

output "build_service_account" {
  description = "Resource name (projects/P/serviceAccounts/EMAIL) of the image build's service account, for gcloud builds submit --service-account."
  value       = google_service_account.build.id
}

output "build_source_location" {
  description = "gs:// path for gcloud builds submit --gcs-source-staging-dir (the build account may read it)."
  value       = "gs://${google_storage_bucket.templates.name}/source"
}

output "staging_location" {
  description = "gs:// path for --staging_location."
  value       = "gs://${google_storage_bucket.staging.name}/staging"
}

output "temp_location" {
  description = "gs:// path for --temp_location (objects expire after temp_retention_days)."
  value       = "gs://${google_storage_bucket.temp.name}/tmp"
}

output "template_path" {
  description = "gs:// path where the Flex Template spec is built (gcloud dataflow flex-template build), in a bucket the worker may only read."
  value       = "gs://${google_storage_bucket.templates.name}/templates/${var.name}.json"
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
