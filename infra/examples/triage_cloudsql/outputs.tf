output "project_id" {
  description = "Project of the deployment."
  value       = var.project_id
}

output "region" {
  description = "Region of the job (--region)."
  value       = var.region
}

output "store" {
  description = "Which long-term store this example composes (the image's store extra)."
  value       = module.deployment.store
}

output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory (terraform output -raw longterm_memory): secretmanager://VERSION, the URI with its credential stays in Secret Manager."
  value       = module.memory.longterm_memory
}

output "launcher_parameters" {
  description = "Flex Template parameters for gcloud dataflow flex-template run (no secrets)."
  value       = module.deployment.launcher_parameters
}

output "answer_signing_key_version" {
  description = "The answer signing key's Secret Manager version, for beam-agents console --answer-signing-key (the job verifies answers with it)."
  value       = module.deployment.answer_signing_key_version
}

output "service_account_email" {
  description = "Worker service account for --service-account-email."
  value       = module.deployment.service_account_email
}

output "build_service_account" {
  description = "The image build's service account, for gcloud builds submit --service-account."
  value       = module.deployment.build_service_account
}

output "build_source_location" {
  description = "Value for gcloud builds submit --gcs-source-staging-dir."
  value       = module.deployment.build_source_location
}

output "staging_location" {
  description = "Value for --staging-location."
  value       = module.deployment.staging_location
}

output "temp_location" {
  description = "Value for --temp-location."
  value       = module.deployment.temp_location
}

output "template_path" {
  description = "Where make deploy builds the Flex Template spec."
  value       = module.deployment.template_path
}

output "image_repository" {
  description = "Where make deploy pushes the image."
  value       = module.deployment.image_repository
}

output "model_secret_id" {
  description = "Secret for the model API key: add a version, name it in the model spec's api_key_secret=."
  value       = module.deployment.model_secret_id
}

output "topics" {
  description = "Topic ids: alerts and answers (publish here), outputs, intents, errors, lifecycle, dead-letter."
  value       = module.deployment.topics
}

output "subscriptions" {
  description = "Subscription ids per topic; read errors with gcloud pubsub subscriptions pull."
  value       = module.deployment.subscriptions
}

output "subnetwork" {
  description = "Value for --subnetwork: the workers' subnetwork (private IPs only)."
  value       = module.deployment.subnetwork
}

output "job_id" {
  description = "Id of the Terraform-managed job; null until applied with image_digest."
  value       = module.deployment.job_id
}

output "longterm_secret_id" {
  description = "Secret Manager secret holding the store URI with its password."
  value       = module.memory.longterm_secret_id
}

output "server_ca_cert" {
  description = "PEM of the instance's server CA; make deploy writes it to app/certs/cloudsql-ca.pem for the image."
  value       = module.memory.server_ca_cert
}

output "instance_connection_name" {
  description = "For the Cloud SQL Auth Proxy when running beam-agents provision from a workstation."
  value       = module.memory.instance_connection_name
}
