-- A v1 ironic_fsm PostgreSQL database as written by the SQLAlchemy-based SQLStore
-- (commit 2aaf771): schema, then two nodes, a reservation and a heartbeat.
-- (pg_dump -O -x --inserts, with the schema qualifier and session settings removed)
CREATE TABLE holders (
    holder character varying(255) NOT NULL,
    heartbeat timestamp with time zone NOT NULL
);
CREATE TABLE ironic_fsm_schema (
    id integer NOT NULL,
    version integer NOT NULL
);
CREATE TABLE nodes (
    uuid character varying(36) NOT NULL,
    name character varying(255),
    driver character varying(255) NOT NULL,
    provision_state character varying(64) NOT NULL,
    maintenance boolean NOT NULL,
    retired boolean NOT NULL,
    reservation character varying(255),
    version integer NOT NULL,
    seq bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    data text NOT NULL
);
INSERT INTO holders VALUES ('old-conductor:1:abc', '2025-01-02 03:04:05.678901+00');
INSERT INTO ironic_fsm_schema VALUES (1, 1);
INSERT INTO nodes VALUES ('11111111-1111-4111-8111-111111111111', 'old-rich', 'ipmi', 'available', true, false, NULL, 2, 1, '2024-02-29 23:59:58.123456+00', '{"uuid":"11111111-1111-4111-8111-111111111111","name":"old-rich","driver":"ipmi","driver_info":{"ipmi_address":"10.0.0.7","ipmi_password":"s3cr3t"},"driver_internal_info":{},"properties":{},"instance_info":{},"extra":{"note":"ünïcødé ✓"},"traits":["CUSTOM_GPU"],"resource_class":null,"provision_state":"available","target_provision_state":null,"power_state":null,"target_power_state":null,"maintenance":true,"maintenance_reason":"fan","fault":null,"last_error":null,"retired":false,"retired_reason":null,"protected":false,"protected_reason":null,"automated_clean":null,"clean_step":null,"deploy_step":null,"service_step":null,"reservation":null,"provision_updated_at":null,"created_at":"2024-02-29T23:59:58.123456+00:00","updated_at":null,"version":1,"target_raid_config":{},"raid_config":{},"power_interface":null,"management_interface":null,"deploy_interface":null,"boot_interface":null,"bios_interface":null,"raid_interface":null,"inspect_interface":null,"rescue_interface":null,"vendor_interface":null,"firmware_interface":null}');
INSERT INTO nodes VALUES ('22222222-2222-4222-8222-222222222222', NULL, 'fake-hardware', 'enroll', false, true, 'old-conductor:1:abc', 2, 2, '2024-02-29 23:59:59.123456+00', '{"uuid":"22222222-2222-4222-8222-222222222222","name":null,"driver":"fake-hardware","driver_info":{},"driver_internal_info":{},"properties":{},"instance_info":{},"extra":{},"traits":[],"resource_class":null,"provision_state":"enroll","target_provision_state":null,"power_state":null,"target_power_state":null,"maintenance":false,"maintenance_reason":null,"fault":null,"last_error":null,"retired":true,"retired_reason":null,"protected":false,"protected_reason":null,"automated_clean":null,"clean_step":null,"deploy_step":null,"service_step":null,"reservation":null,"provision_updated_at":null,"created_at":"2024-02-29T23:59:59.123456+00:00","updated_at":null,"version":0,"target_raid_config":{},"raid_config":{},"power_interface":null,"management_interface":null,"deploy_interface":null,"boot_interface":null,"bios_interface":null,"raid_interface":null,"inspect_interface":null,"rescue_interface":null,"vendor_interface":null,"firmware_interface":null}');
ALTER TABLE ONLY holders
    ADD CONSTRAINT holders_pkey PRIMARY KEY (holder);
ALTER TABLE ONLY ironic_fsm_schema
    ADD CONSTRAINT ironic_fsm_schema_pkey PRIMARY KEY (id);
ALTER TABLE ONLY nodes
    ADD CONSTRAINT nodes_pkey PRIMARY KEY (uuid);
ALTER TABLE ONLY nodes
    ADD CONSTRAINT uniq_nodes0name UNIQUE (name);
CREATE INDEX nodes_driver_idx ON nodes USING btree (driver);
CREATE INDEX nodes_provision_state_idx ON nodes USING btree (provision_state);
CREATE INDEX nodes_reservation_idx ON nodes USING btree (reservation);
CREATE INDEX nodes_seq_idx ON nodes USING btree (seq);
