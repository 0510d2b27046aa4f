output "project_id" {
  description = "The project, once the APIs are enabled: the caller's store and network take it from here so they wait for them."
  value       = var.project_id

  depends_on = [google_project_service.this]
}

output "store" {
  description = "Which long-term store the caller composes (the image's store extra)."
  value       = var.store
}

output "launcher_parameters" {
  description = "Flex Template parameters for gcloud dataflow flex-template run (no secrets)."
  value       = local.launcher_parameters
}

output "answer_signing_key_version" {
  description = "Secret Manager version holding the answer signing key: the job's answer_signing_secret, and the console's --answer-signing-key."
  value       = module.answer_signing_key.version_name
}

output "service_account_email" {
  description = "Worker service account for --service-account-email and the store's IAM grants."
  value       = module.runtime.service_account_email
}

output "build_service_account" {
  description = "The image build's service account, for gcloud builds submit --service-account."
  value       = module.runtime.build_service_account
}

output "build_source_location" {
  description = "Value for gcloud builds submit --gcs-source-staging-dir."
  value       = module.runtime.build_source_location
}

output "staging_location" {
  description = "Value for --staging-location."
  value       = module.runtime.staging_location
}

output "temp_location" {
  description = "Value for --temp-location."
  value       = module.runtime.temp_location
}

output "template_path" {
  description = "Where make deploy builds the Flex Template spec."
  value       = module.runtime.template_path
}

output "image_repository" {
  description = "Where make deploy pushes the image."
  value       = module.runtime.image_repository
}

output "model_secret_id" {
  description = "Secret for the model API key: add a version, name it in the model spec's api_key_secret=."
  value       = module.runtime.model_secret_id
}

output "topics" {
  description = "Topic ids: alerts and answers (publish here), outputs, intents, errors, lifecycle, dead-letter."
  value       = module.runtime.topics
}

output "subscriptions" {
  description = "Subscription ids per topic; read errors with gcloud pubsub subscriptions pull."
  value       = module.runtime.subscriptions
}

output "subnetwork" {
  description = "Value for --subnetwork: the workers' subnetwork (private IPs only, Private Google Access)."
  value       = google_compute_subnetwork.workers.self_link
}

output "network_id" {
  description = "The workers' VPC, which a store on a private IP joins (its private_network or authorized_network)."
  value       = google_compute_network.this.id
}

output "private_services_range" {
  description = "Name of the peered range a store on a private IP (postgres, redis) allocates its address from; known once the peering exists, so the store waits for it. null for other stores."
  value       = one(google_service_networking_connection.private_services[*].reserved_peering_ranges[0])
}

output "job_id" {
  description = "Id of the Terraform-managed job; null until applied with image_digest."
  value       = one(module.job[*].job_id)
}
