provider "google" {
  project = var.project_id
  region  = var.region
}

locals {
  services = toset([
    "artifactregistry.googleapis.com",
    "bigtable.googleapis.com",
    "bigtableadmin.googleapis.com",
    "compute.googleapis.com",
    "dataflow.googleapis.com",
    "pubsub.googleapis.com",
    "storage.googleapis.com",
  ])
}

resource "google_project_service" "this" {
  for_each = local.services

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

module "runtime" {
  source = "../../modules/dataflow_runtime"

  project_id       = var.project_id
  region           = var.region
  name             = "triage"
  launcher_members = var.launcher_members

  depends_on = [google_project_service.this]
}

module "memory" {
  source = "../../modules/bigtable_store"

  project_id             = var.project_id
  instance_name          = "triage-memory"
  zone                   = coalesce(var.zone, "${var.region}-b")
  max_age                = var.memory_max_age
  worker_service_account = module.runtime.service_account_email
  deletion_protection    = var.deletion_protection

  depends_on = [google_project_service.this]
}
