provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}

# What every triage example shares (modules/triage_deployment): the APIs, the Dataflow
# runtime and job, the launcher parameters and, as the store needs, a VPC with private
# service access or the secret holding a store URI that carries a credential.
module "deployment" {
  source = "../../modules/triage_deployment"

  project_id             = var.project_id
  region                 = var.region
  store                  = "redis"
  longterm_memory_secret = "${module.memory.longterm_memory}?ssl_ca_certs=${local.redis_ca_path}"
  model                  = var.model
  image_tag              = var.image_tag
  subnet_cidr            = var.subnet_cidr
  max_workers            = var.max_workers
  launcher_members       = var.launcher_members
}

locals {
  # The instance's CA is not a public one: make deploy bakes the server_ca_cert output into
  # the image at this path (app/certs/redis-ca.pem in the build context).
  redis_ca_path = "/opt/triage/app/certs/redis-ca.pem"
}

module "memory" {
  source = "../../modules/redis_store"

  project_id         = module.deployment.project_id
  region             = var.region
  name               = "triage-memory"
  authorized_network = module.deployment.network_id
  reserved_ip_range  = module.deployment.private_services_range
  tier               = var.redis_tier
  memory_size_gb     = var.memory_size_gb
}
