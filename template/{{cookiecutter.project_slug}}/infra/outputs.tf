{%- set backend = cookiecutter.longterm_backend -%}
output "service_account_email" {
  description = "Worker service account for --service_account_email."
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

output "subnetwork" {
  description = "Value for --subnetwork: the workers' subnetwork (private IPs only)."
  value       = google_compute_subnetwork.workers.self_link
}

output "staging_location" {
  description = "Value for --staging_location."
  value       = module.runtime.staging_location
}

output "temp_location" {
  description = "Value for --temp_location."
  value       = module.runtime.temp_location
}

output "template_path" {
  description = "Where make deploy builds the Flex Template spec (a bucket the worker may only read)."
  value       = module.runtime.template_path
}

output "image_repository" {
  description = "Where make deploy pushes the Flex Template image."
  value       = module.runtime.image_repository
}

output "events_topic" {
  description = "Topic producers publish events to."
  value       = module.runtime.topics["events"]
}

output "events_subscription" {
  description = "Value for --input_subscription."
  value       = module.runtime.subscriptions["events"]
}

output "outputs_topic" {
  description = "Value for --outputs_topic."
  value       = module.runtime.topics["outputs"]
}

output "intents_topic" {
  description = "Value for --intents_topic."
  value       = module.runtime.topics["intents"]
}

output "errors_topic" {
  description = "Value for --errors_topic (dead letters)."
  value       = module.runtime.topics["errors"]
}
{%- if cookiecutter.include_hitl == "yes" %}

output "answers_topic" {
  description = "Topic approvers publish answers to."
  value       = module.runtime.topics["answers"]
}

output "answers_subscription" {
  description = "Value for --answers_subscription."
  value       = module.runtime.subscriptions["answers"]
}
{%- endif %}

output "entity_hash_key_version" {
  description = "Value for --entity_hash_secret: the Secret Manager version of the key the workers hash entity keys under."
  value       = module.entity_hash_key.version_name
}
{%- if cookiecutter.include_hitl == "yes" %}

output "answer_signing_key_version" {
  description = "Value for --answer_signing_secret, and for beam-agents console --answer-signing-key: the Secret Manager version of the key answers are signed with."
  value       = module.answer_signing_key.version_name
}
{%- endif %}

output "dead_letter_subscription" {
  description = "Input messages Pub/Sub could not deliver to the job; pull them from here."
  value       = module.runtime.subscriptions["dead-letter"]
}

output "subscriptions" {
  description = "Subscription id per topic name, for readers of the outputs, intents and errors."
  value       = module.runtime.subscriptions
}
{%- if backend in ("postgres", "redis", "bigtable", "firestore") %}

output "longterm_memory" {
  description = "Value for --longterm (terraform output -raw longterm_memory){% if backend in ('postgres', 'redis') %}: secretmanager:// and the version holding the URI with its password, read by the workers{% endif %}."
  value       = module.memory.longterm_memory
}
{%- endif %}
{%- if backend in ("postgres", "redis") %}

output "server_ca_cert" {
  description = "PEM of the store's server CA; make deploy writes it to certs/ for the image."
  value       = module.memory.server_ca_cert
}
{%- endif %}
{%- if cookiecutter.model_provider != "fake" %}

# The runtime module creates the secret, and lets only the worker read it; its value never
# enters Terraform state. Add the key as a version once (make deploy names the latest):
#   printf %s "$KEY" | gcloud secrets versions add \
#     "$(terraform -chdir=infra output -raw model_api_key_secret_id)" --data-file=-
output "model_api_key_secret_id" {
  description = "Secret Manager secret (projects/P/secrets/S) for the {{ cookiecutter.model_provider }} API key; add the key as a version."
  value       = module.runtime.model_secret_id
}
{%- endif %}
