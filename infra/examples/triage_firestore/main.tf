provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}

# What every triage example shares (modules/triage_deployment): the APIs, the workers'
# private network, the Dataflow runtime and job, the launcher parameters and, for a store
# on a private IP, private service access.
module "deployment" {
  source = "../../modules/triage_deployment"

  project_id       = var.project_id
  region           = var.region
  store            = "firestore"
  longterm_memory  = module.memory.longterm_memory
  model            = var.model
  otlp_endpoint    = var.otlp_endpoint
  image_digest     = var.image_digest
  max_workers      = var.max_workers
  launcher_members = var.launcher_members
  approvers        = var.approvers
  answer_signers   = var.answer_signers
  alert_publishers = var.alert_publishers
  subnet_cidr      = var.subnet_cidr
  kms_key_name     = var.kms_key_name
}

module "memory" {
  source = "../../modules/firestore_store"

  project_id             = module.deployment.project_id
  location_id            = coalesce(var.firestore_location, var.region)
  database_name          = "triage-memory"
  ttl_enabled            = var.ttl_enabled
  embedding_dimensions   = var.embedding_dimensions
  worker_service_account = module.deployment.service_account_email
  kms_key_name           = var.kms_key_name
}
