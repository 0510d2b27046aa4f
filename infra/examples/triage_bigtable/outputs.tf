output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory (terraform output -raw longterm_memory)."
  value       = module.memory.longterm_memory
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
