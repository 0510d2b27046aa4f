{%- from "module_source.j2" import module_source with context -%}

{%- set hitl = cookiecutter.include_hitl == "yes" -%}

# The key the workers hash entity keys under in spans and dead-letter logs (the
# entity_hash_secret parameter): one per deployment, so a hash means the same entity on
# every worker yet cannot be recomputed from a guessed key outside it. Drawn ephemeral and
# written write-only by the module, it never enters Terraform state; only the workers
# read it, and the job names its version, not `latest`.
module "entity_hash_key" {
  source = "{{ module_source("generated_key") }}"

  project_id             = var.project_id
  secret_id              = "${local.name}-entity-hash"
  worker_service_account = module.runtime.service_account_email

  depends_on = [google_project_service.this]
}

# Where the key stood before it had a module of its own: an existing project keeps its
# secret and version (a new key would change every entity's hash).
moved {
  from = google_secret_manager_secret.entity_hash
  to   = module.entity_hash_key.google_secret_manager_secret.this
}

moved {
  from = google_secret_manager_secret_version.entity_hash
  to   = module.entity_hash_key.google_secret_manager_secret_version.this
}

moved {
  from = google_secret_manager_secret_iam_member.entity_hash_worker
  to   = module.entity_hash_key.google_secret_manager_secret_iam_member.worker
}
{%- if hitl %}

# The key answers are signed with (the answer_signing_secret parameter): without it
# anyone allowed to publish on the answers topic could decide any approval. Drawn and
# written like the hashing key; the workers verify with it and the console
# (answer_signers) signs with it; nobody else reads it.
module "answer_signing_key" {
  source = "{{ module_source("generated_key") }}"

  project_id             = var.project_id
  secret_id              = "${local.name}-answer-signing"
  worker_service_account = module.runtime.service_account_email
  readers                = var.answer_signers

  depends_on = [google_project_service.this]
}

moved {
  from = google_secret_manager_secret.answer_signing
  to   = module.answer_signing_key.google_secret_manager_secret.this
}

moved {
  from = google_secret_manager_secret_version.answer_signing
  to   = module.answer_signing_key.google_secret_manager_secret_version.this
}

moved {
  from = google_secret_manager_secret_iam_member.answer_signing_worker
  to   = module.answer_signing_key.google_secret_manager_secret_iam_member.worker
}

moved {
  from = google_secret_manager_secret_iam_member.answer_signing_signer
  to   = module.answer_signing_key.google_secret_manager_secret_iam_member.reader
}
{%- endif %}
