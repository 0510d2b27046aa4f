{%- set backend = cookiecutter.longterm_backend -%}
output "service_account_email" {
  description = "Worker service account for --service_account_email."
  value       = module.runtime.service_account_email
}

output "staging_location" {
  description = "Value for --staging_location; the Flex Template spec is stored here."
  value       = module.runtime.staging_location
}

output "temp_location" {
  description = "Value for --temp_location."
  value       = module.runtime.temp_location
}

output "image_repository" {
  description = "Where make deploy pushes the Flex Template image."
  value       = module.runtime.image_repository
}

output "events_topic" {
  description = "Topic producers publish events to."
  value       = module.runtime.events_topic
}

output "events_subscription" {
  description = "Value for --input_subscription."
  value       = module.runtime.events_subscription
}

output "outputs_topic" {
  description = "Value for --outputs_topic."
  value       = module.runtime.outputs_topic
}

output "intents_topic" {
  description = "Value for --intents_topic."
  value       = google_pubsub_topic.intents.id
}

output "errors_topic" {
  description = "Value for --errors_topic (dead letters)."
  value       = module.runtime.errors_topic
}
{%- if cookiecutter.include_hitl == "yes" %}

output "answers_topic" {
  description = "Topic approvers publish answers to."
  value       = google_pubsub_topic.answers.id
}

output "answers_subscription" {
  description = "Value for --answers_subscription."
  value       = google_pubsub_subscription.answers.id
}
{%- endif %}
{%- if backend in ("postgres", "redis", "bigtable", "firestore") %}

output "longterm_memory" {
  description = "Value for --longterm (terraform output -raw longterm_memory){% if backend in ('postgres', 'redis') %}; carries a secret{% endif %}."
  value       = module.memory.longterm_memory
{%- if backend in ("postgres", "redis") %}
  sensitive   = true
{%- endif %}
}
{%- endif %}
{%- if backend in ("postgres", "redis") %}

output "subnetwork" {
  description = "Value for --subnetwork: the workers must run in the store's VPC."
  value       = google_compute_subnetwork.workers.self_link
}
{%- endif %}
{%- if cookiecutter.model_provider != "fake" %}

output "model_api_key_secret_id" {
  description = "Secret Manager secret (projects/P/secrets/S) holding the {{ cookiecutter.model_provider }} API key."
  value       = google_secret_manager_secret.model_api_key.id
}
{%- endif %}
