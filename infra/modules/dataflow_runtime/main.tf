locals {
  worker = "serviceAccount:${google_service_account.worker.email}"
  # Pipeline inputs and outputs. `errors` is the dead-letter topic for ActivationError records.
  topics = toset(["events", "outputs", "errors"])
  # What the worker may do on each topic: read events, write outputs and dead letters.
  published = toset(["outputs", "errors"])
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

resource "google_storage_bucket" "staging" {
  project                     = var.project_id
  name                        = "${var.project_id}-${var.name}-staging"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = var.force_destroy
  labels                      = var.labels
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
  labels        = var.labels
}

resource "google_artifact_registry_repository_iam_member" "worker" {
  project    = var.project_id
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.reader"
  member     = local.worker
}

resource "google_pubsub_topic" "this" {
  for_each = local.topics

  project = var.project_id
  name    = "${var.name}-${each.key}"
  labels  = var.labels
}

# One subscription per topic: `events` is the pipeline's input; `outputs` and `errors`
# hold results and dead letters for downstream consumers and operators.
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
}

resource "google_pubsub_subscription_iam_member" "events_subscriber" {
  for_each = toset(["roles/pubsub.subscriber", "roles/pubsub.viewer"])

  project      = var.project_id
  subscription = google_pubsub_subscription.this["events"].name
  role         = each.value
  member       = local.worker
}

resource "google_pubsub_topic_iam_member" "publisher" {
  for_each = local.published

  project = var.project_id
  topic   = google_pubsub_topic.this[each.key].name
  role    = "roles/pubsub.publisher"
  member  = local.worker
}
