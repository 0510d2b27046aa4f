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
  store            = "redis"
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

locals {
  # The instance's CA is not a public one: make deploy bakes the server_ca_cert output into
  # the image at this path (app/certs/redis-ca.pem in the build context).
  redis_ca_path = "/opt/triage/app/certs/redis-ca.pem"
}

module "memory" {
  source = "../../modules/redis_store"

  project_id             = module.deployment.project_id
  region                 = var.region
  name                   = "triage-memory"
  authorized_network     = module.deployment.network_id
  reserved_ip_range      = module.deployment.private_services_range
  tier                   = var.redis_tier
  memory_size_gb         = var.memory_size_gb
  ca_path                = local.redis_ca_path
  worker_service_account = module.deployment.service_account_email
  kms_key_name           = var.kms_key_name
}
