output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory (terraform output -raw longterm_memory); carries the password."
  value       = module.memory.longterm_memory
  sensitive   = true
}

output "password_secret_id" {
  description = "Secret Manager secret holding the database password."
  value       = module.memory.password_secret_id
}

output "instance_connection_name" {
  description = "For the Cloud SQL Auth Proxy when running beam-agents provision from a workstation."
  value       = module.memory.instance_connection_name
}

output "subnetwork" {
  description = "Value for --subnetwork: the workers must run in the database's VPC."
  value       = google_compute_subnetwork.workers.self_link
}

output "service_account_email" {
  description = "Worker service account for --service_account_email."
  value       = module.runtime.service_account_email
}

output "staging_location" {
  description = "Value for --staging_location."
  value       = module.runtime.staging_location
}

output "temp_location" {
  description = "Value for --temp_location."
  value       = module.runtime.temp_location
}

output "image_repository" {
  description = "Where to push the Flex Template image."
  value       = module.runtime.image_repository
}

output "events_subscription" {
  description = "Subscription the triage pipeline reads events from."
  value       = module.runtime.events_subscription
}

output "outputs_topic" {
  description = "Topic the triage pipeline publishes outputs to."
  value       = module.runtime.outputs_topic
}

output "errors_topic" {
  description = "Dead-letter topic for activation errors."
  value       = module.runtime.errors_topic
}
