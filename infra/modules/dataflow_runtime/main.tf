locals {
  worker = "serviceAccount:${google_service_account.worker.email}"
  build  = "serviceAccount:${google_service_account.build.email}"
  # The Pub/Sub service agent moves undeliverable messages to the dead-letter topic.
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  inputs       = toset(var.input_topics)
  outputs      = toset(var.output_topics)
  # Every topic gets a subscription: inputs are the pipeline's, outputs are for downstream
  # consumers and operators (e.g. reading the errors topic), dead-letter keeps what failed.
  topics = setunion(local.inputs, local.outputs, toset(["dead-letter"]))
  # Who may publish to an input topic besides project-wide publishers: e.g. only the
  # approvers may post to `answers`.
  input_publishers = {
    for pair in flatten([
      for topic, members in var.input_publishers : [for member in members : { topic = topic, member = member }]
    ]) : "${pair.topic}/${pair.member}" => pair
  }
  # Optional customer-managed encryption: one key for the buckets, repository and topics.
  encryption = var.kms_key_name == null ? [] : [var.kms_key_name]
}

data "google_project" "this" {
  project_id = var.project_id
}

resource "google_service_account" "worker" {
  project      = var.project_id
  account_id   = "${var.name}-worker"
  display_name = "beam-agents Dataflow worker"
  description  = "Runs the beam-agents Dataflow workers and Flex Template launcher."
}

# The one project-level grant: run Dataflow work items. Everything else is scoped below.
resource "google_project_iam_member" "dataflow_worker" {
  project = var.project_id
  role    = "roles/dataflow.worker"
  member  = local.worker
}

resource "google_service_account_iam_member" "launchers" {
  for_each = toset(var.launcher_members)

  service_account_id = google_service_account.worker.name
  role               = "roles/iam.serviceAccountUser"
  member             = each.value
}

# Builds the image, instead of the project's default Cloud Build identity (often the
# Compute Engine default account with roles/editor). It may read the build sources, push
# to the one repository and write its build logs; nothing else.
resource "google_service_account" "build" {
  project      = var.project_id
  account_id   = "${var.name}-build"
  display_name = "beam-agents image build"
  description  = "Runs the Cloud Build that builds the beam-agents Flex Template image."
}

resource "google_project_iam_member" "build_logs" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = local.build
}

resource "google_service_account_iam_member" "builders" {
  for_each = toset(var.launcher_members)

  service_account_id = google_service_account.build.name
  role               = "roles/iam.serviceAccountUser"
  member             = each.value
}

resource "google_storage_bucket" "staging" {
  project                     = var.project_id
  name                        = "${var.project_id}-${var.name}-staging"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = var.force_destroy
  labels                      = var.labels

  # Every launch stages the job's graph and files under a folder of its own; nothing
  # removes old ones. Workers read a running job's files when they start, so keep them
  # longer than a job runs between updates.
  dynamic "lifecycle_rule" {
    for_each = var.staging_retention_days == null ? [] : [var.staging_retention_days]
    content {
      condition {
        age = lifecycle_rule.value
      }
      action {
        type = "Delete"
      }
    }
  }

  dynamic "encryption" {
    for_each = local.encryption
    content {
      default_kms_key_name = encryption.value
    }
  }
}

# Flex Template specs and build sources, apart from the staging bucket the worker writes
# to: a worker that could rewrite the spec could change the image the next launch runs.
# The worker and the build account may only read here; versioning keeps every spec.
resource "google_storage_bucket" "templates" {
  project                     = var.project_id
  name                        = "${var.project_id}-${var.name}-templates"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = var.force_destroy
  labels                      = var.labels

  versioning {
    enabled = true
  }

  lifecycle_rule {
    condition {
      num_newer_versions = 10
      with_state         = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }

  dynamic "encryption" {
    for_each = local.encryption
    content {
      default_kms_key_name = encryption.value
    }
  }
}

# Whoever deploys writes the spec and uploads the build sources.
resource "google_storage_bucket_iam_member" "templates_writers" {
  for_each = toset(var.launcher_members)

  bucket = google_storage_bucket.templates.name
  role   = "roles/storage.objectAdmin"
  member = each.value
}

resource "google_storage_bucket_iam_member" "templates_reader" {
  for_each = {
    worker = local.worker
    build  = local.build
  }

  bucket = google_storage_bucket.templates.name
  role   = "roles/storage.objectViewer"
  member = each.value
}

resource "google_storage_bucket" "temp" {
  project                     = var.project_id
  name                        = "${var.project_id}-${var.name}-temp"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = var.force_destroy
  labels                      = var.labels

  lifecycle_rule {
    condition {
      age = var.temp_retention_days
    }
    action {
      type = "Delete"
    }
  }

  dynamic "encryption" {
    for_each = local.encryption
    content {
      default_kms_key_name = encryption.value
    }
  }
}

resource "google_storage_bucket_iam_member" "worker" {
  for_each = {
    staging = google_storage_bucket.staging.name
    temp    = google_storage_bucket.temp.name
  }

  bucket = each.value
  role   = "roles/storage.objectAdmin"
  member = local.worker
}

resource "google_artifact_registry_repository" "images" {
  project       = var.project_id
  location      = var.region
  repository_id = var.name
  format        = "DOCKER"
  description   = "Flex Template images of beam-agents pipelines."
  kms_key_name  = var.kms_key_name
  labels        = var.labels

  # A tag, once pushed, always names the same image; deployments use the digest anyway.
  docker_config {
    immutable_tags = true
  }
}

resource "google_artifact_registry_repository_iam_member" "worker" {
  project    = var.project_id
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.reader"
  member     = local.worker
}

resource "google_artifact_registry_repository_iam_member" "build" {
  project    = var.project_id
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.writer"
  member     = local.build
}

# The model provider's API key. Terraform creates the empty secret; its value is added
# out of band (`gcloud secrets versions add`), so the key never enters Terraform state.
resource "google_secret_manager_secret" "model" {
  project   = var.project_id
  secret_id = "${var.name}-model"
  labels    = var.labels

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_iam_member" "model_accessor" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.model.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = local.worker
}

resource "google_pubsub_topic" "this" {
  for_each = local.topics

  project      = var.project_id
  name         = "${var.name}-${each.key}"
  kms_key_name = var.kms_key_name
  labels       = var.labels
}

resource "google_pubsub_subscription" "this" {
  for_each = local.topics

  project                    = var.project_id
  name                       = "${var.name}-${each.key}"
  topic                      = google_pubsub_topic.this[each.key].id
  ack_deadline_seconds       = 60
  message_retention_duration = var.message_retention
  labels                     = var.labels

  expiration_policy {
    ttl = ""
  }

  # A message the pipeline cannot take after max_delivery_attempts moves aside instead of
  # blocking its subscription; only the pipeline's inputs have one.
  dynamic "dead_letter_policy" {
    for_each = contains(var.input_topics, each.key) ? [1] : []
    content {
      dead_letter_topic     = google_pubsub_topic.this["dead-letter"].id
      max_delivery_attempts = var.max_delivery_attempts
    }
  }
}

resource "google_pubsub_subscription_iam_member" "input_subscriber" {
  for_each = {
    for pair in setproduct(var.input_topics, ["roles/pubsub.subscriber", "roles/pubsub.viewer"]) :
    "${pair[0]}/${pair[1]}" => { topic = pair[0], role = pair[1] }
  }

  project      = var.project_id
  subscription = google_pubsub_subscription.this[each.value.topic].name
  role         = each.value.role
  member       = local.worker
}

resource "google_pubsub_topic_iam_member" "publisher" {
  for_each = local.outputs

  project = var.project_id
  topic   = google_pubsub_topic.this[each.key].name
  role    = "roles/pubsub.publisher"
  member  = local.worker
}

resource "google_pubsub_topic_iam_member" "input_publisher" {
  for_each = local.input_publishers

  project = var.project_id
  topic   = google_pubsub_topic.this[each.value.topic].name
  role    = "roles/pubsub.publisher"
  member  = each.value.member
}

resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.this["dead-letter"].name
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "dead_letter_source" {
  for_each = local.inputs

  project      = var.project_id
  subscription = google_pubsub_subscription.this[each.key].name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}
