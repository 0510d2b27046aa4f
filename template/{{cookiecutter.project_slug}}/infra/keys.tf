{%- set hitl = cookiecutter.include_hitl == "yes" -%}
# The key the workers hash entity keys under in spans and dead-letter logs (the
# entity_hash_secret parameter): one per deployment, so a hash means the same entity on
# every worker yet cannot be recomputed from a guessed key outside it. Drawn ephemeral and
# written write-only, it never enters Terraform state; only the workers read it.
ephemeral "random_password" "entity_hash" {
  length  = 64
  special = false
}

resource "google_secret_manager_secret" "entity_hash" {
  project   = var.project_id
  secret_id = "${local.name}-entity-hash"

  replication {
    auto {}
  }

  depends_on = [google_project_service.this]
}

resource "google_secret_manager_secret_version" "entity_hash" {
  secret                 = google_secret_manager_secret.entity_hash.id
  secret_data_wo         = ephemeral.random_password.entity_hash.result
  secret_data_wo_version = 1
}

resource "google_secret_manager_secret_iam_member" "entity_hash_worker" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.entity_hash.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${module.runtime.service_account_email}"
}
{%- if hitl %}

# The key answers are signed with (the answer_signing_secret parameter): without it
# anyone allowed to publish on the answers topic could decide any approval. Drawn and
# written like the hashing key; the workers verify with it and the console
# (answer_signers) signs with it. The job names this version, not `latest`.
ephemeral "random_password" "answer_signing" {
  length  = 64
  special = false
}

resource "google_secret_manager_secret" "answer_signing" {
  project   = var.project_id
  secret_id = "${local.name}-answer-signing"

  replication {
    auto {}
  }

  depends_on = [google_project_service.this]
}

resource "google_secret_manager_secret_version" "answer_signing" {
  secret                 = google_secret_manager_secret.answer_signing.id
  secret_data_wo         = ephemeral.random_password.answer_signing.result
  secret_data_wo_version = 1
}

resource "google_secret_manager_secret_iam_member" "answer_signing_worker" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.answer_signing.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${module.runtime.service_account_email}"
}

# Whoever signs answers (the console's identity) reads the key; nobody else does.
resource "google_secret_manager_secret_iam_member" "answer_signing_signer" {
  for_each = toset(var.answer_signers)

  project   = var.project_id
  secret_id = google_secret_manager_secret.answer_signing.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = each.value
}
{%- endif %}
