//! QC template versions and QC sets (spec 2.11, 4.10), and QC gates on qcsteps (issue 16,
//! item 6): a pass/fail template's qcstep completes only after a passing verdict, a failing
//! verdict sends it and its stage to rework, questions-only templates never block, drafts are
//! finalized through the versions endpoint.

use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::{D, node, stage_node, stage_resource};

#[tokio::test]
async fn versions_are_published_read_and_deleted_unless_referenced() {
    let server = TestServer::start().await;
    let api = server.org("qc").await;
    assert_error(
        &api.post(
            "/qc-template",
            json!({"name": "x", "qcTemplateId": uuid::Uuid::new_v4()}),
        )
        .await,
        405,
        "METHOD_NOT_ALLOWED",
    );
    let v1 = api
        .post(
            "/qc-template/versions",
            json!({"name": "Weld check", "questions": [{"text": "Bead even?"}]}),
        )
        .await;
    assert_eq!(v1.status, 201, "{v1}");
    assert_eq!(v1.body["versionNumber"], 1);
    assert_eq!(v1.body["requiresPassFail"], true);
    let template = v1.body["qcTemplateId"].clone();
    let v2 = api
        .post("/qc-template/versions", json!({"qcTemplateId": template, "name": "Weld check", "requiresPassFail": false, "isDraft": true}))
        .await;
    assert_eq!(v2.status, 201, "{v2}");
    assert_eq!(v2.body["versionNumber"], 2);
    assert_validation_names(
        &api.post(
            "/qc-template/versions",
            json!({"qcTemplateId": uuid::Uuid::new_v4(), "name": "x"}),
        )
        .await,
        "qcTemplateId",
    );
    assert_validation_names(
        &api.post("/qc-template/versions", json!({"name": " "}))
            .await,
        "name",
    );
    assert_validation_names(
        &api.post("/qc-template/versions", json!({"name": "x", "bogus": 1}))
            .await,
        "bogus",
    );
    // Reads.
    assert_eq!(api.list("qc-template", "search=weld").await.len(), 2);
    assert_eq!(api.count("qc-template", "isDraft=true").await, 1);
    let groups = api
        .post(
            "/qc-template/group-and-count",
            json!({"groupByField": "qcTemplateId"}),
        )
        .await;
    assert_eq!(
        groups.body["values"],
        json!([{"groupId": template, "count": 2}]),
        "{groups}"
    );
    let q = api
        .post(
            "/qc-template/query",
            json!({"select": ["versionNumber"], "filter": {"requiresPassFail": false}}),
        )
        .await;
    assert_eq!(q.body["values"][0]["versionNumber"], 2, "{q}");
    assert_eq!(
        api.post("/qc-template/count", json!({})).await.body["count"],
        2
    );
    // PATCH writes nothing.
    let id1 = v1.body["id"].as_str().unwrap().to_string();
    let before = api.read("qc-template", &id1).await;
    let patched = api
        .patch(&format!("/qc-template/{id1}"), json!({"name": "Renamed"}))
        .await;
    assert_eq!(patched.status, 200, "{patched}");
    assert_eq!(patched.body, before);
    assert_eq!(api.read("qc-template", &id1).await, before);
    assert_error(
        &api.patch(&format!("/qc-template/{}", uuid::Uuid::new_v4()), json!({}))
            .await,
        404,
        "NOT_FOUND",
    );
    // A QC set must name a version; a referenced version cannot be deleted.
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": uuid::Uuid::new_v4(), "deliverableId": uuid::Uuid::new_v4()}),
        )
        .await,
        "templateId",
    );
    // ... and an existing deliverable of the organization.
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": id1, "deliverableId": uuid::Uuid::new_v4()}),
        )
        .await,
        "deliverableId",
    );
    let checked = node(&api, "checked", "order", None).await;
    let set = api
        .create(
            "qc-set",
            json!({"templateId": id1, "deliverableId": checked}),
        )
        .await;
    assert_error(
        &api.delete(&format!("/qc-template/{id1}")).await,
        409,
        "CONFLICT",
    );
    assert_eq!(api.read("qc-template", &id1).await["id"], id1.as_str());
    assert_eq!(
        api.delete(&format!("/qc-set/{}", set["id"].as_str().unwrap()))
            .await
            .status,
        204
    );
    assert_eq!(api.delete(&format!("/qc-template/{id1}")).await.status, 204);
    assert_error(
        &api.get(&format!("/qc-template/{id1}")).await,
        404,
        "NOT_FOUND",
    );
    // Another organization sees none of it.
    let other = server.org("other").await;
    assert_error(
        &other
            .get(&format!("/qc-template/{}", v2.body["id"].as_str().unwrap()))
            .await,
        404,
        "NOT_FOUND",
    );
    assert_validation_names(
        &other
            .post(
                "/qc-template/versions",
                json!({"qcTemplateId": template, "name": "x"}),
            )
            .await,
        "qcTemplateId",
    );
}

async fn progress(api: &Api, root: &str, id: &str, action: &str) -> Resp {
    api.post(
        &format!("/{D}/root/{root}/progress/{id}"),
        json!({ "type": action }),
    )
    .await
}

fn status(d: &Value) -> &str {
    d["progress"]["status"].as_str().unwrap_or("none")
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// An order with a stage holding a step and a qcstep of `template`; returns (order, stage,
/// step, qcstep).
async fn tree(api: &Api, template: &Value) -> (String, String, String, String) {
    let (stage, _) = stage_resource(api, "Weld").await;
    let o = node(api, "O", "order", None).await;
    let s = stage_node(api, "S", &o, &stage).await;
    let step = node(api, "a", "step", Some(&s)).await;
    let q = id(&api
        .create(
            D,
            json!({"name": "q", "type": "qcstep", "parentId": s, "data": {"qcTemplateId": template}}),
        )
        .await);
    (o, s, step, q)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_fail_template_gates_its_qcstep() {
    let server = TestServer::start().await;
    let api = server.org("qc-gate").await;
    let v1 = api
        .post(
            "/qc-template/versions",
            json!({"name": "Weld check", "questions": [
                {"key": "bead", "text": "Bead even?", "required": true},
                {"text": "Notes"}
            ]}),
        )
        .await;
    assert_eq!(v1.status, 201, "{v1}");
    assert_eq!(v1.body["questions"][1]["key"], "q2", "{v1}");
    let version = id(&v1.body);
    let (o, s, step, q) = tree(&api, &v1.body["qcTemplateId"]).await;

    // No QC set: completing the qcstep is refused naming the QC set, by the action, by a
    // complete of its stage (which cascades to it) and by a raw write of its progress.
    let r = progress(&api, &o, &q, "complete").await;
    assert_validation_names(&r, "qcSetId");
    assert!(r.body.to_string().contains(&q), "names the qcstep: {r}");
    assert_validation_names(&progress(&api, &o, &s, "complete").await, "qcSetId");
    assert_validation_names(
        &api.patch(
            &format!("/{D}/{q}"),
            json!({"progress": {"status": "done", "percentage": 100}}),
        )
        .await,
        "qcSetId",
    );
    assert_validation_names(
        &api.put(
            &format!("/{D}/bulk"),
            json!([{"id": q, "name": "q", "type": "qcstep", "parentId": s,
                    "data": {"qcTemplateId": v1.body["qcTemplateId"]},
                    "progress": {"status": "done", "percentage": 100}}]),
        )
        .await,
        "qcSetId",
    );
    assert_eq!(status(&api.read(D, &q).await), "none");
    assert_eq!(progress(&api, &o, &step, "complete").await.status, 200);

    // A pass needs the required questions answered; a verdict names only the version's keys.
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": version, "deliverableId": q, "verdict": "pass"}),
        )
        .await,
        "answers",
    );
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": version, "deliverableId": q,
                   "answers": [{"questionKey": "nope", "value": 1}]}),
        )
        .await,
        "questionKey",
    );
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": version, "deliverableId": q, "verdict": "maybe"}),
        )
        .await,
        "verdict",
    );

    // A failing verdict: the qcstep and its stage go to rework, and the gate stays shut.
    let set = api
        .create(
            "qc-set",
            json!({"templateId": version, "deliverableId": q, "verdict": "fail",
                   "reason": "bead uneven", "answers": [{"questionKey": "bead", "value": false}],
                   "verdictAt": "2000-01-01T00:00:00Z"}),
        )
        .await;
    assert!(
        set["verdictAt"].is_string() && set["verdictAt"] != "2000-01-01T00:00:00Z",
        "{set}"
    );
    assert!(set["verdictById"].is_string(), "{set}");
    let set_id = id(&set);
    let qn = api.read(D, &q).await;
    assert_eq!(status(&qn), "rework", "{qn}");
    assert_eq!(qn["progress"]["hasBeenReworked"], true);
    assert_eq!(status(&api.read(D, &s).await), "rework");
    let r = progress(&api, &o, &q, "complete").await;
    assert_validation_names(&r, "qcSetId");
    assert!(
        r.body.to_string().contains(&set_id),
        "names the failing QC set: {r}"
    );

    // A passing verdict opens it; the roll-up completes the stage.
    let passed = api
        .patch(
            &format!("/qc-set/{set_id}"),
            json!({"verdict": "pass", "answers": [{"questionKey": "bead", "value": true}]}),
        )
        .await;
    assert_eq!(passed.status, 200, "{passed}");
    assert_ne!(passed.body["verdictAt"], set["verdictAt"]);
    assert_eq!(
        status(&api.read(D, &q).await),
        "rework",
        "a pass completes nothing itself"
    );
    let r = progress(&api, &o, &q, "complete").await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(status(&api.read(D, &q).await), "done");
    assert_eq!(status(&api.read(D, &s).await), "done");
    // Re-saving the verdict keeps its stamp.
    let resaved = api
        .patch(&format!("/qc-set/{set_id}"), json!({"reason": "fixed"}))
        .await;
    assert_eq!(
        resaved.body["verdictAt"], passed.body["verdictAt"],
        "{resaved}"
    );

    // Failing it again reopens the done step and its stage.
    let failed = api
        .patch(&format!("/qc-set/{set_id}"), json!({"verdict": "fail"}))
        .await;
    assert_eq!(failed.status, 200, "{failed}");
    assert_eq!(status(&api.read(D, &q).await), "rework");
    assert_eq!(status(&api.read(D, &s).await), "rework");
    assert_eq!(status(&api.read(D, &o).await), "wip");
    assert_validation_names(&progress(&api, &o, &s, "complete").await, "qcSetId");

    // A later passing set opens it again; deleting that set leaves the failure the latest
    // verdict, which sends the done step back to rework.
    let second = api
        .create(
            "qc-set",
            json!({"templateId": version, "deliverableId": q, "verdict": "pass",
                   "answers": [{"questionKey": "bead", "value": true}]}),
        )
        .await;
    assert_eq!(progress(&api, &o, &q, "complete").await.status, 200);
    assert_eq!(status(&api.read(D, &q).await), "done");
    assert_eq!(
        api.delete(&format!("/qc-set/{}", id(&second))).await.status,
        204
    );
    assert_eq!(status(&api.read(D, &q).await), "rework");
    assert_validation_names(&progress(&api, &o, &q, "complete").await, "qcSetId");

    // A QC set of another template cannot be recorded for the qcstep.
    let other = api
        .post("/qc-template/versions", json!({"name": "Paint check"}))
        .await;
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": id(&other.body), "deliverableId": q, "verdict": "pass"}),
        )
        .await,
        "templateId",
    );

    // Another organization's QC set cannot open the gate: it cannot name this qcstep (nor
    // this organization's version), and its own sets are not this organization's.
    let stranger = server.org("stranger").await;
    let theirs = stranger
        .post("/qc-template/versions", json!({"name": "Weld check"}))
        .await;
    assert_validation_names(
        &stranger
            .post(
                "/qc-set",
                json!({"templateId": id(&theirs.body), "deliverableId": q, "verdict": "pass"}),
            )
            .await,
        "deliverableId",
    );
    assert_validation_names(
        &stranger
            .post(
                "/qc-set",
                json!({"templateId": version, "deliverableId": q, "verdict": "pass"}),
            )
            .await,
        "templateId",
    );
    assert_validation_names(&progress(&api, &o, &q, "complete").await, "qcSetId");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_questions_only_template_never_blocks() {
    let server = TestServer::start().await;
    let api = server.org("qc-questions").await;
    let v = api
        .post(
            "/qc-template/versions",
            json!({"name": "Why late", "requiresPassFail": false,
                   "questions": [{"key": "cause", "text": "Cause?", "required": true}]}),
        )
        .await;
    assert_eq!(v.status, 201, "{v}");
    let (o, _, _, q) = tree(&api, &v.body["qcTemplateId"]).await;
    // A verdict is refused; answers and a reason are captured.
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": id(&v.body), "deliverableId": q, "verdict": "fail"}),
        )
        .await,
        "verdict",
    );
    let set = api
        .create(
            "qc-set",
            json!({"templateId": id(&v.body), "deliverableId": q, "reason": "supplier late",
                   "answers": [{"questionKey": "cause", "value": "steel"}]}),
        )
        .await;
    assert_eq!(set["verdict"], Value::Null);
    assert_eq!(set["verdictAt"], Value::Null);
    assert_eq!(set["answers"][0]["value"], "steel");
    let r = progress(&api, &o, &q, "complete").await;
    assert_eq!(r.status, 200, "{r}");
    // Without any QC set too.
    let (o2, _, _, q2) = tree(&api, &v.body["qcTemplateId"]).await;
    assert_eq!(progress(&api, &o2, &q2, "complete").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafts_are_edited_and_finalized_through_the_versions_endpoint() {
    let server = TestServer::start().await;
    let api = server.org("qc-drafts").await;
    let draft = api
        .post(
            "/qc-template/versions",
            json!({"name": "Weld check", "isDraft": true}),
        )
        .await;
    assert_eq!(draft.status, 201, "{draft}");
    let template = draft.body["qcTemplateId"].clone();
    let draft_id = id(&draft.body);
    let (o, _, _, q) = tree(&api, &template).await;
    // A draft is not in force and takes no QC sets.
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": draft_id, "deliverableId": q}),
        )
        .await,
        "templateId",
    );
    // Publishing while the draft is open edits it in place ...
    let edited = api
        .post(
            "/qc-template/versions",
            json!({"qcTemplateId": template, "name": "Weld check", "isDraft": true,
                   "questions": [{"text": "Bead even?"}]}),
        )
        .await;
    assert_eq!(edited.status, 201, "{edited}");
    assert_eq!(id(&edited.body), draft_id);
    assert_eq!(edited.body["versionNumber"], 1);
    assert_eq!(edited.body["isDraft"], true);
    // ... and `isDraft: false` finalizes it: the gate is in force from then on.
    let done = api
        .post(
            "/qc-template/versions",
            json!({"qcTemplateId": template, "name": "Weld check (final)",
                   "questions": [{"text": "Bead even?"}]}),
        )
        .await;
    assert_eq!(done.status, 201, "{done}");
    assert_eq!(id(&done.body), draft_id);
    assert_eq!(done.body["versionNumber"], 1);
    assert_eq!(done.body["isDraft"], false);
    assert_eq!(done.body["name"], "Weld check (final)");
    assert_eq!(api.count("qc-template", "").await, 1);
    assert_validation_names(&progress(&api, &o, &q, "complete").await, "qcSetId");
    api.create(
        "qc-set",
        json!({"templateId": draft_id, "deliverableId": q, "verdict": "pass"}),
    )
    .await;
    assert_eq!(progress(&api, &o, &q, "complete").await.status, 200);
    // A finalized version is immutable: the next publish is version 2.
    let v2 = api
        .post(
            "/qc-template/versions",
            json!({"qcTemplateId": template, "name": "Weld check"}),
        )
        .await;
    assert_eq!(v2.body["versionNumber"], 2, "{v2}");
    assert_ne!(id(&v2.body), draft_id);
}

/// A complete and a failing verdict racing on one qcstep: whichever commits first, the step
/// ends in rework (never done with a failing latest verdict).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_racing_a_failing_verdict_ends_in_rework() {
    let server = TestServer::start().await;
    let api = server.org("qc-race").await;
    let v = api
        .post("/qc-template/versions", json!({"name": "Weld check"}))
        .await;
    for _ in 0..4 {
        let (o, _, _, q) = tree(&api, &v.body["qcTemplateId"]).await;
        let set = api
            .create(
                "qc-set",
                json!({"templateId": id(&v.body), "deliverableId": q, "verdict": "pass"}),
            )
            .await;
        let path = format!("/qc-set/{}", id(&set));
        let (done, failed) = tokio::join!(
            progress(&api, &o, &q, "complete"),
            api.patch(&path, json!({"verdict": "fail"}))
        );
        assert_eq!(failed.status, 200, "{failed}");
        assert!(done.status == 200 || done.status == 400, "{done}");
        assert_eq!(status(&api.read(D, &q).await), "rework");
    }
}
